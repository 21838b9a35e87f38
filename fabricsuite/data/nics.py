"""A fabric NIC's host side: the PCIe link it trained at against the most it and its slot can
do (read by config/launchers/read-counters under its PCI device, judged by
fabricsuite.data.links), and the environment that keeps one rank's messages on a chosen NIC or
rail through each MPI's own NIC selection (../shared/notes/multi-rail.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PcieLink:
    """The PCIe link of a NIC as the kernel reports it under its PCI device
    (drivers/pci/pci-sysfs.c): the speed and width it trained at, and the most it and the port
    above it (its bridge or root port) can do. A NIC at x8 of x16, or a generation down, halves
    what the node can inject while its fabric port reads healthy."""
    #: the speed it trained at, GT/s per lane (current_link_speed), None: unknown
    gts: float | None
    #: the lanes it trained at (current_link_width), None: unknown
    width: int | None
    #: the most the NIC and the port above it can both do (max_link_speed, max_link_width of
    #: each, the lower), None: unknown
    max_gts: float | None
    max_width: int | None

    def below(self) -> bool:
        """Whether it trained below what it and its slot can do (unknown figures are not)."""
        return ((None not in (self.gts, self.max_gts) and self.gts < self.max_gts)
                or (None not in (self.width, self.max_width) and self.width < self.max_width))

    def describe(self) -> str:
        """"PCIe 16.0 GT/s x8, capable of 32.0 GT/s x16" (the capability where it is below)."""
        now = f"PCIe {_gts(self.gts)} x{self.width or '?'}"
        return now + (f", capable of {_gts(self.max_gts)} x{self.max_width or '?'}"
                      if self.below() else "")


def _gts(value: float | None) -> str:
    return "? GT/s" if value is None else f"{value:.1f} GT/s"


#: A PCIe speed as the kernel prints it: "16.0 GT/s PCIe" (5.7 and later), "16 GT/s" and
#: "2.5 GT/s" (earlier); "Unknown" or "Unknown speed" where the link is down.
_PCIE_SPEED = re.compile(r"(?P<gts>\d+(?:\.\d+)?) ?GT/s(?: PCIe)?")


def pcie_speed(text: str) -> float | None:
    """A PCIe speed in GT/s per lane from sysfs's text, None where unknown."""
    match = _PCIE_SPEED.fullmatch(text.strip())
    return float(match.group("gts")) if match else None


def _pcie_width(text: str) -> int | None:
    """A PCIe width from sysfs ("16"; 0 or unreadable: unknown)."""
    text = text.strip().removeprefix("x")
    return int(text) if text.isdigit() and int(text) > 0 else None


def _least(*values: float | int | None) -> Any:
    known = [v for v in values if v is not None]
    return min(known) if known else None


def pcie_link(values: Mapping[str, str]) -> PcieLink | None:
    """The PCIe link from a port's "pcie_*" attributes (read-counters), None without any."""
    if not any(k.startswith("pcie_") for k in values):
        return None
    return PcieLink(pcie_speed(values.get("pcie_current_link_speed", "")),
                    _pcie_width(values.get("pcie_current_link_width", "")),
                    _least(pcie_speed(values.get("pcie_max_link_speed", "")),
                           pcie_speed(values.get("pcie_upstream_max_link_speed", ""))),
                    _least(_pcie_width(values.get("pcie_max_link_width", "")),
                           _pcie_width(values.get("pcie_upstream_max_link_width", ""))))


def mpi_devices(ports: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The environment that keeps one rank's messages on `ports` (one rail, or several to
    stripe over), for each MPI's own NIC selection (../shared/notes/multi-rail.md): Open MPI's
    TCP transport (btl_tcp_if_include), UCX (UCX_NET_DEVICES, "mlx5_1:1" for an HCA's port, the
    interface for TCP; UCX_MAX_RNDV_RAILS the rails a large message is split over) and
    libfabric's CXI provider (FI_CXI_DEVICE_NAME). Each MPI reads its own and ignores the
    others'."""
    interfaces = [p.split("/", 1)[1] for p in ports if p.startswith("net/")]
    hcas = [":".join(p.split("/")[1:]) for p in ports if p.startswith("infiniband/")]
    nics = [p.split("/", 1)[1] for p in ports if p.startswith("cxi/")]
    env = {}
    if interfaces:
        env["OMPI_MCA_btl_tcp_if_include"] = ",".join(interfaces)
    if interfaces or hcas:
        env["UCX_NET_DEVICES"] = ",".join(hcas + interfaces)
        env["UCX_MAX_RNDV_RAILS"] = str(min(len(hcas + interfaces), 4))  # UCX's most
    if nics:
        env["FI_CXI_DEVICE_NAME"] = ",".join(nics)
        env["MPICH_OFI_NUM_NICS"] = str(len(nics))
    return env

"""Rail by rail: the ping-pong bandwidth between two nodes on each of their rails, and striped.

Test plan. On a partition whose nodes have several NICs, each cabled to its own switch plane
(a rail-optimized fabric: 4 Slingshot NICs a node on Frontier and LUMI-G, 8 NDR HCAs on a DGX
H100), a ping-pong between two nodes with one rank each uses one rail, or the few the MPI
stripes over: judged against the node's sum, a healthy node reads a quarter of its promise,
and a slow rail hides behind its siblings. So this check runs where a partition declares its
rails (extras.fabric.links.rails, fabricsuite.data.links) and has the `rails` feature:

- NetbenchRailBandwidth: `netbench bibw` between two nodes (other-node), one case per rail
  (parameter `rail`: rail1..railK, K the most rails a partition of the system declares; a
  partition with fewer skips the others with the reason) with both ranks' messages kept on
  that rail by each MPI's own NIC selection (Open MPI's btl_tcp_if_include, UCX_NET_DEVICES,
  FI_CXI_DEVICE_NAME: fabricsuite.data.nics.mpi_devices), and one case `striped` over every
  rail at once. Figures: bandwidth at 1 MiB and peak (MB/s, against the partition's
  references, indexed by the level `rail`), and the bandwidth at 1 MiB as a fraction of what
  the path can carry (one rail's rate, or the rails' sum when striped; at least the promised
  bandwidth_fraction, on every machine and day).

A rail below its promise fails its own case, named by its rail; the links of every rail are
read before and after the job like every check's (a rail down or trained slower is a LINK
DEGRADED finding naming the port and its rail). On one rail each rank runs on the cores
near that rail's NIC (config/launchers/near-nic: hwloc's locality of the NIC; where hwloc
cannot place it, as on the emulated nodes' virtual NICs, where the launcher put it, said on
the job's stderr; `near_nic` records the port).
"""

import reframe as rfm
from reframe.core.builtins import parameter

from fabricsuite.checks.rails import RailBound, declared_rails
from fabricsuite.checks.rfm_netbench import NetbenchPairCheck, cell, summary
from fabricsuite.data.links import line_fraction

MiB = 1024 * 1024
#: A sweep to 1 MiB in steps of 8x: the figures judged and a peak, in a quarter of the default
#: sweep's time (one job per rail; the default goes to 4 MiB in steps of 2x).
RAIL_SIZES = [8, 64, 512, 4096, 32768, 262144, MiB]


@rfm.simple_test
class NetbenchRailBandwidth(RailBound, NetbenchPairCheck):
    descr = "Ping-pong bandwidth between two nodes on one rail, and striped over the rails"
    method = "bibw"
    required_sizes = RAIL_SIZES
    netbench_options = ["--sizes", ",".join(map(str, RAIL_SIZES))]
    size_table = "bibw"
    metrics = {
        "bandwidth_1MiB_MBps": cell("bibw", "bandwidth_median_MBps", size_bytes=MiB),
        "bandwidth_peak_MBps": summary("bandwidth_peak_MBps"),
        "bandwidth_1MiB_line_fraction": line_fraction(
            cell("bibw", "bandwidth_median_MBps", size_bytes=MiB)),
    }
    valid_systems = ["+mpi +rails"]
    distance = parameter(["other-node"], loggable=True)
    #: which rail the pair's messages take ("rail2"), or "striped" over every rail
    rail = parameter(declared_rails(), loggable=True)
    tags = {"pt2pt", "netbench", "rails"}

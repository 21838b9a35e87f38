"""`fabricsuite init --system NAME`: onboard a Slurm cluster from what it says about itself.

Run on a login node (where `sinfo`, `scontrol` and `srun` work). It writes what a center writes
by hand, each file only where none exists (never overwriting):

- `config/systems/NAME.py`: one ReFrame partition per Slurm partition (node count, CPUs,
  sockets, cores, threads, GPUs from GRES; scheduler `slurm`, or `squeue` without accounting;
  launcher `srun`; `--partition=P` as access option), one programming environment per MPI
  found on the path (its compiler wrapper, the PMI type srun offers for it);
- `config/hwloc/NAME-<type>.xml`: the node topology per node type, recorded once through
  `srun -p P -N 1 -n 1 lstopo --of xml -` (the distance classes come from it);
- each partition's `extras.fabric`: the contract of its links (ports, count, rate, width) as
  every node reports them (one `srun` task per node: config/launchers/read-counters, source
  links), with the nodes that differ named, for a person to confirm (fabricsuite.data.links);
- `config/spack/NAME.yaml`: the MPIs found, as Spack externals (not buildable);
- `reference/NAME.yaml`: no references yet, only where they came from;

and prints the next commands: acceptance runs in separate sessions, the baseline, the nightly.
`--config-dir` and `--reference-dir` write elsewhere (ReFrame then finds the system through
`FABRICSUITE_CONFIG_PATH`, the references through `RFM_REFERENCE_PREFIX`).
"""

from __future__ import annotations

import argparse
import os
import pprint
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from fabricsuite import REPO_ROOT
from fabricsuite.base.commandline import UsageError, check_system, command_output, one_line_errors
from fabricsuite.data import links, topology
from fabricsuite.data.references import reference_dir
from fabricsuite.data.store import write_new

#: Seconds a Slurm query or a topology job may take.
QUERY_TIMEOUT_S = 120


@dataclass
class NodeType:
    """One line of `sinfo`: nodes of one partition with the same hardware."""

    partition: str
    nodes: int
    cpus: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    gres: str
    nodelist: str

    @property
    def label(self) -> str:
        return f"{self.sockets}s{self.cores_per_socket}c{self.threads_per_core}t"

    @property
    def key(self) -> tuple[str, str]:
        """(partition, label): where its recorded topology is looked up."""
        return self.partition, self.label

    @property
    def gpus(self) -> int:
        """GPUs per node from GRES (gpu:4, gpu:a100:4, gpu:a100:4(S:0-1), ...)."""
        total = 0
        for item in self.gres.split(","):
            parts = re.sub(r"\(.*?\)", "", item).split(":")
            if parts[0] == "gpu" and parts[-1].isdigit():
                total += int(parts[-1])
        return total


@dataclass
class MpiEnv:
    name: str
    cc: str
    version: str
    prefix: str
    env_vars: list[list[str]] = field(default_factory=list)


def _run(cmd: list[str], what: str) -> str:
    return command_output(cmd, what, QUERY_TIMEOUT_S, "run `fabricsuite init` on a login node "
                          "of the cluster, where the Slurm commands work")


#: sinfo fields: partition, nodes, CPUs, sockets, cores per socket, threads per core, GRES, list.
SINFO_FORMAT = "%R|%D|%c|%X|%Y|%Z|%G|%N"


#: The names of SINFO_FORMAT's fields, for the error lines.
SINFO_FIELDS = ("partition", "node count", "CPUs", "sockets", "cores per socket",
                "threads per core", "GRES", "node list")


def parse_sinfo(text: str) -> list[NodeType]:
    """Node types from `sinfo -h -e -o SINFO_FORMAT` (one line per partition and hardware).
    A field that is no number ("N/A"), a node type of nodes without CPUs, sockets, cores or
    threads, an empty partition name or a control character is one line naming the field:
    never a default of 1, a `--cpus-per-task=0` or a `--partition=` in the configuration."""
    found = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if re.search(r"[\x00-\x1f\x7f]", line.strip()):
            raise UsageError(f"sinfo printed {line.strip()!r} with a control character; check "
                             f"the partition and node names (scontrol show partition)")
        fields = line.strip().split("|")
        if len(fields) != 8:
            raise UsageError(f"sinfo printed {line!r}, not {SINFO_FORMAT}; is this Slurm?")
        partition = fields[0].rstrip("*")
        if not partition:
            raise UsageError(f"sinfo printed {line!r} with an empty partition name; is this "
                             f"Slurm?")
        numbers = []
        for name, value in zip(SINFO_FIELDS[1:6], fields[1:6], strict=True):
            digits = re.fullmatch(r"(\d+)\+?", value.strip())
            # sinfo prints N/A where it knows no value; a node type with nodes needs them all
            numbers.append(int(digits.group(1)) if digits else None)
            if numbers[0] is None or (numbers[0] > 0 and not numbers[-1]):
                raise UsageError(f"sinfo: partition {partition!r}: {name} {value!r} is not a "
                                 f"{'number' if numbers[0] is None else 'positive number'}; "
                                 f"check its nodes (scontrol show node), or run init with "
                                 f"--partition for the others")
        found.append(NodeType(partition, *[n or 0 for n in numbers],
                              "" if fields[6] == "(null)" else fields[6], fields[7]))
    if not found:
        raise UsageError("sinfo lists no partition; is this a Slurm login node?")
    return found


def slurm_settings() -> dict[str, str]:
    """`scontrol show config` as {key: value}."""
    settings = {}
    for line in _run(["scontrol", "show", "config"], "scontrol show config").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            settings[key.strip()] = value.strip()
    return settings


def pmi_types() -> set[str]:
    """The MPI plugin types srun offers (`srun --mpi=list`)."""
    text = _run(["srun", "--mpi=list"], "srun --mpi=list")
    return set(re.findall(r"\b(pmix|pmi2|cray_shasta|pmi)\b", text))


def detect_mpis(pmis: set[str]) -> list[MpiEnv]:
    """The MPIs whose compiler wrapper is on the path: Debian's side-by-side names first, then a
    plain `mpicc`, told apart by its own version options."""
    found: dict[str, MpiEnv] = {}
    root = os.geteuid() == 0
    for name, wrappers, version_cmd in (
            ("openmpi", ["mpicc.openmpi", "mpicc"], ["--showme:version"]),
            ("mpich", ["mpicc.mpich", "mpicc"], ["-v"])):
        for cc in wrappers:
            path = shutil.which(cc)
            if path is None or name in found:
                continue
            proc = subprocess.run([path, *version_cmd], capture_output=True, text=True,
                                  timeout=QUERY_TIMEOUT_S)
            text = proc.stdout + proc.stderr
            if proc.returncode != 0 or (name == "openmpi") != ("Open MPI" in text):
                continue
            if name == "mpich" and "MPICH" not in text.upper():
                continue
            version = re.search(r"(\d+\.\d+(\.\d+)?)", text)
            env = MpiEnv(name, cc, version.group(1) if version else "",
                         str(Path(os.path.realpath(path)).parent.parent))
            pmi = ("pmix" if "pmix" in pmis else "pmi2") if name == "openmpi" else \
                ("pmi2" if "pmi2" in pmis else "pmix")
            env.env_vars.append(["SLURM_MPI_TYPE", pmi])
            if name == "openmpi" and root:
                env.env_vars += [["OMPI_ALLOW_RUN_AS_ROOT", "1"],
                                 ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"]]
            found[name] = env
    if not found:
        raise UsageError("no MPI compiler wrapper on PATH (mpicc, mpicc.openmpi, mpicc.mpich): "
                         "load the MPI module first (`module load openmpi`) and run again")
    return list(found.values())


def record_topology(node_type: NodeType, path: Path) -> str:
    """The node topology of a node type through one job step on one of its nodes; written to
    `path` (atomically) unless it exists. Returns what was done."""
    if path.exists():
        return f"kept {path} (exists)"
    lstopo = "lstopo-no-graphics" if shutil.which("lstopo-no-graphics") else "lstopo"
    # The whole node (--exclusive, every CPU to the one task): a step of one CPU would record a
    # topology whose allowed CPUs (the step's cgroup) hold no pair.
    xml = _run(["srun", f"--partition={node_type.partition}", "--nodes=1", "--ntasks=1",
                "--exclusive", f"--cpus-per-task={node_type.cpus}",
                f"--nodelist={first_node(node_type.nodelist)}", "--time=5", lstopo,
                "--of", "xml", "-"], f"lstopo on a node of {node_type.partition}")
    try:
        topology.parse(xml, f"lstopo on {node_type.partition}")  # a real topology, or one line
    except topology.TopologyError as err:
        raise UsageError(f"{err}; is hwloc's lstopo installed on the compute nodes?") from None
    write_file(path, xml)
    return f"wrote {path}"


#: The reader of a node's links (fabricsuite.data.links), run on every node of a partition.
READ_LINKS = REPO_ROOT / "config" / "launchers" / "read-counters"


def record_links(partition: str, nodes: int) -> tuple[dict | None, list[str]]:
    """Every node's links through one job step with a task on each node of `partition`
    (`read-counters - links`), and the contract they suggest (fabricsuite.data.links.propose):
    (extras["fabric"] for a person to confirm, or None; what was read, one line each). A step
    that fails is a line, never the end of init: the contract is then declared by hand."""
    try:
        text = _run(["srun", f"--partition={partition}", f"--nodes={nodes}",
                     f"--ntasks={nodes}", "--ntasks-per-node=1", "--label", "--time=5",
                     str(READ_LINKS), "-", "links"], f"reading the links of {partition}")
    except UsageError as err:
        return None, [f"links of {partition} not read: {err}; declare extras.fabric by hand "
                      f"(docs/verdicts.md)"]
    fabric, notes = links.propose(links.parse_nodes(text))
    return fabric, [f"{partition}: {note}" for note in notes]


def write_file(path: Path, text: str) -> None:
    """A new file (never overwriting), its directory made; an error is one line naming it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_new(path, text)
    except OSError as err:
        raise UsageError(f"cannot write {err.filename or path}: {err.strerror or err}; pass a "
                         f"writable --config-dir or --reference-dir") from None


def reframe_name(partition: str) -> str:
    """A Slurm partition's name as a ReFrame partition and file name: letters, digits, '_' and
    '-' (ReFrame's rule; nothing a path could climb out with), starting with a letter or
    digit: `a.b` -> `a_b`, `../x` -> `p___x`."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", partition)
    return name if re.match(r"[A-Za-z0-9]", name) else f"p{name}"


def usable_types(types: list[NodeType]) -> tuple[list[NodeType], list[str]]:
    """The node types a configuration can use, and why each other was skipped (a partition
    without nodes). Two Slurm partitions that become one ReFrame name are refused in one line."""
    kept, skipped, names = [], [], {}
    for node_type in types:
        if node_type.nodes < 1:
            skipped.append(f"skipped Slurm partition {node_type.partition!r}: sinfo lists no "
                           f"node in it")
            continue
        name = reframe_name(node_type.partition)
        other = names.setdefault(name, node_type.partition)
        if other != node_type.partition:
            raise UsageError(f"Slurm partitions {other!r} and {node_type.partition!r} both "
                             f"become the ReFrame partition {name!r}; run init with --partition "
                             f"for one of them and add the other by hand")
        kept.append(node_type)
    if not kept:
        raise UsageError("no Slurm partition with nodes to describe; " + "; ".join(skipped))
    return kept, skipped


def inside(path: Path, directory: Path, option: str) -> Path:
    """`path`, after checking that it resolves inside `directory` (a name from Slurm must never
    write elsewhere)."""
    if not path.resolve().is_relative_to(directory.resolve()):
        raise UsageError(f"{path} would be written outside {directory}; check {option} and the "
                         f"partition names sinfo prints")
    return path


def first_node(nodelist: str) -> str:
    """The first host of a Slurm node list: fsemu[1-4] -> fsemu1, a[01,05],b1 -> a01."""
    head = re.match(r"([^\[,]+)(\[([^\]]+)\])?", nodelist)
    if not head:
        return nodelist
    if not head.group(3):
        return head.group(1)
    first = re.split(r"[,-]", head.group(3))[0]
    return head.group(1) + first


def system_config(system: str, types: list[NodeType], mpis: list[MpiEnv],
                  settings: dict[str, str], hwloc: dict[tuple[str, str], str],
                  fabrics: dict[str, dict] | None = None) -> dict:
    """The ReFrame configuration fragment of the cluster (config/systems/NAME.py); `fabrics`:
    each Slurm partition's proposed contract of its links (extras.fabric)."""
    accounting = settings.get("AccountingStorageType", "accounting_storage/none")
    scheduler = "squeue" if accounting.endswith("/none") else "slurm"
    partitions = []
    by_partition: dict[str, list[NodeType]] = {}
    for node_type in types:
        by_partition.setdefault(node_type.partition, []).append(node_type)
    for name, node_types in by_partition.items():
        # A partition of several node types: the smallest nodes decide what a job can use.
        small = min(node_types, key=lambda t: t.cpus)
        nodes = sum(t.nodes for t in node_types)
        partition = {
            "name": reframe_name(name),
            "descr": f"Slurm partition {name}: {nodes} node(s) of {small.sockets} x "
                     f"{small.cores_per_socket} cores x {small.threads_per_core} threads"
                     + (f", {small.gpus} GPU(s)" if small.gpus else ""),
            "scheduler": scheduler,
            "launcher": "srun",
            "access": [f"--partition={name}"],
            "environs": [m.name for m in mpis],
            "features": ["mpi"] + (["gpu"] if small.gpus else []),
            "processor": {"num_cpus": small.cpus,
                          "num_cpus_per_core": small.threads_per_core,
                          "num_sockets": small.sockets,
                          "num_cpus_per_socket": small.cores_per_socket * small.threads_per_core},
            "extras": {"nodes": nodes, "hwloc_xml": hwloc[small.key],
                       **({"fabric": (fabrics or {})[name]} if (fabrics or {}).get(name)
                          else {})},
            # Timing checks must not overlap: concurrent benchmarks distort each other.
            "max_jobs": 1,
        }
        if small.gpus:
            partition["devices"] = [{"type": "gpu", "num_devices": small.gpus}]
        if len(node_types) > 1:
            partition["descr"] += f" (mixed: {', '.join(t.label for t in node_types)})"
        partitions.append(partition)
    return {
        "systems": [{
            "name": system,
            "descr": f"Slurm cluster {settings.get('ClusterName', system)} (fabricsuite init)",
            # The login node's name; widen it to match every login node of the cluster.
            "hostnames": [f"^{re.escape(socket.gethostname())}$"],
            "modules_system": "lmod" if os.environ.get("LMOD_CMD") else "nomod",
            "partitions": partitions,
        }],
        "environments": [{
            "name": m.name, "cc": m.cc, "features": ["mpi"], "target_systems": [system],
            "env_vars": m.env_vars,
        } for m in mpis],
    }


def spack_externals(mpis: list[MpiEnv]) -> str:
    lines = ["# Spack site file of this cluster (fabricsuite init): the MPIs found on the path",
             "# as externals, never built. Add compilers and other externals with",
             "# `spack external find`; see config/spack/examplecluster.yaml.",
             "packages:"]
    for m in mpis:
        lines += [f"  {m.name}:", "    buildable: false", "    externals:",
                  f"    - spec: {m.name}@{m.version or 'unknown'}", f"      prefix: {m.prefix}"]
    lines += ["  mpi:", "    buildable: false"]
    return "\n".join(lines) + "\n"


def run_init(args: argparse.Namespace) -> int:
    system = check_system(args.system)
    if system == "local":
        raise UsageError("--system local is the embedded default (this machine); name the "
                         "cluster, e.g. --system mycluster")
    config = Path(args.config_dir) if args.config_dir else REPO_ROOT / "config"
    references = Path(args.reference_dir) if args.reference_dir else reference_dir()
    for directory, option in ((config, "--config-dir"), (references, "--reference-dir")):
        if directory.exists() and not directory.is_dir():
            raise UsageError(f"{option} {directory} is not a directory; pass a directory (it "
                             f"is made where missing)")
    existing = config / "systems" / f"{system}.py"
    if existing.exists():
        # never a second description beside the first (new topology and Spack files that the
        # system's configuration does not name)
        raise UsageError(f"system {system!r} exists ({existing}); choose another --system, or "
                         f"move that file away to describe the cluster anew")
    settings = slurm_settings()
    types = parse_sinfo(_run(["sinfo", "-h", "-e", "-o", SINFO_FORMAT], "sinfo"))
    if args.partition:
        types = [t for t in types if t.partition in args.partition]
        if not types:
            raise UsageError(f"--partition {', '.join(args.partition)}: no such Slurm "
                             f"partition; sinfo lists them")
    types, done = usable_types(types)
    mpis = detect_mpis(pmi_types())
    hwloc = {}
    for node_type in types:
        path = inside(config / "hwloc" / f"{system}-{reframe_name(node_type.partition)}-"
                      f"{node_type.label}.xml", config, "--config-dir")
        # relative to config/ where the system lives in the repository; absolute elsewhere
        hwloc[node_type.key] = (str(path.relative_to(REPO_ROOT / "config"))
                      if path.is_relative_to(REPO_ROOT / "config") else str(path))
        print(f"fabricsuite init: recording the topology of {node_type.partition} "
              f"({node_type.label}) on {first_node(node_type.nodelist)} ...", file=sys.stderr)
        done.append(record_topology(node_type, path))
        # which NICs and GPUs hang near which cores (the rails' NICs among them)
        try:
            near = topology.devices_near(path.read_text(), str(path))
        except (OSError, topology.TopologyError):
            near = []
        if near:
            done.append(f"{node_type.partition} ({node_type.label}): NICs and GPUs near cores "
                        f"(hwloc): {' | '.join(near)}")
    fabrics = {}
    for partition in sorted({t.partition for t in types}):
        nodes = sum(t.nodes for t in types if t.partition == partition)
        print(f"fabricsuite init: reading the links of {partition} on its {nodes} node(s) ...",
              file=sys.stderr)
        fabric, notes = record_links(partition, nodes)
        if fabric:
            fabrics[partition] = fabric
            notes.append(f"{partition}: wrote extras.fabric {fabric}: the fabric's promise, "
                         f"which acceptance is judged against; confirm it (and add the "
                         f"vendor's figures under extras.fabric.promise: bandwidth_fraction, "
                         f"busbw_fraction, latency_8B_us; docs/verdicts.md)")
        done += notes
    fragment = system_config(system, types, mpis, settings, hwloc, fabrics)
    header = (f'"""ReFrame system {system}, written by `fabricsuite init --system {system}` on '
              f'{socket.gethostname()}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.\n\n'
              f'From sinfo, scontrol show config, srun --mpi=list and the MPI compiler wrappers '
              f'on PATH.\nReview the hostnames (every login node) and the environments '
              f'(modules to load), then run\nthe acceptance sessions (README, "Adopting it on a '
              f'cluster").\n"""\n\n')
    files = [
        (config / "systems" / f"{system}.py",
         header + "site_configuration = " + pprint.pformat(fragment, width=96,
                                                          sort_dicts=False) + "\n"),
        (config / "spack" / f"{system}.yaml", spack_externals(mpis)),
        (references / f"{system}.yaml",
         f"# References of {system}: none yet. Take them from three acceptance sessions with\n"
         f"# `fabricsuite baseline --system {system} --acceptance REPORT1 REPORT2 REPORT3`.\n"
         f"_provenance: {{produced_by: fabricsuite init, date_utc: "
         f"'{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}'}}\n"),
    ]
    for (path, text), (directory, option) in zip(
            files, [(config, "--config-dir")] * 2 + [(references, "--reference-dir")],
            strict=True):
        inside(path, directory, option)
        if path.exists():
            done.append(f"kept {path} (exists; nothing overwritten)")
            continue
        write_file(path, text)
        done.append(f"wrote {path}")
    for line in done:
        print(line)
    where = [] if args.config_dir is None else [f"FABRICSUITE_CONFIG_PATH={config}"]
    where += [] if args.reference_dir is None else [f"RFM_REFERENCE_PREFIX={references}"]
    prefix = " ".join(where) + (" " if where else "")
    print(f"""
next, from this login node:
  1. acceptance, three sessions hours apart (no references yet):
     {prefix}fabricsuite nightly --system {system} --mode acceptance --tag acceptance \\
         -- -S require_reference=false
  2. references from their run reports:
     {prefix}fabricsuite baseline --system {system} --acceptance REPORT1 REPORT2 REPORT3
  3. every night (cron or CI, see ci/cron.example):
     {prefix}fabricsuite nightly --system {system}""")
    return 0


def add_parser(sub) -> None:
    parser = sub.add_parser(
        "init", help="onboard a Slurm cluster: system configuration, node topologies, Spack "
                     "externals, an empty reference file",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("--system", required=True, help="name of the new ReFrame system")
    parser.add_argument("--partition", action="append", metavar="NAME",
                        help="only this Slurm partition (repeatable; default: every one)")
    parser.add_argument("--config-dir", metavar="DIR",
                        help="write systems/, hwloc/ and spack/ here (default: config/ of the "
                             "repository); ReFrame finds them with FABRICSUITE_CONFIG_PATH=DIR")
    parser.add_argument("--reference-dir", metavar="DIR",
                        help="write the reference file here (default: $RFM_REFERENCE_PREFIX, "
                             "else reference/)")


run = one_line_errors("init")(run_init)

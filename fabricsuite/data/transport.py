"""Which transport carried a run, from the MPI library's own selection output, and whether it is
the one the partition expects.

The MPI tool interface does not answer it: Debian's Open MPI 4.1 has no performance variables
and its control variables hold only the requested components (`btl = '^uct,openib,ofi'`), and
MPICH 4.0 has none for its netmod's choice. So rank 0 asks its MPI to say it (`netbench
--transport-evidence`, set before MPI_Init, only where the environment does not set it):

- Open MPI (ob1): `OMPI_MCA_btl_base_verbose=1` prints, on stderr, one line per peer
  `[host:pid] mca: bml: Using vader btl for send to [[job,1],1] on node host`.
- UCX (MPICH ch4:ucx, Open MPI's pml ucx): `UCX_LOG_LEVEL=info` prints, on stdout, one line
  per endpoint configuration `... UCX  INFO    ep_cfg[1]: tag(sysv/memory cma/memory) ...`; the
  tag lanes are what carries MPI messages.

A carrier is what took rank 0's messages to some peers: a BTL, or UCX's set of tag transports.
Its locality is `node` (the peer on rank 0's node; for UCX: shared-memory transports only) or
`network`. A partition declares what it expects per programming environment in
`extras["transport"]`: a regular expression that every carrier must match (`"vader"`), or one
per locality (`{"network": "tcp"}`: carriers to other nodes must match, and a job across nodes
must have one). A partition that declares nothing, or an output without the lines (another
MPI, or the environment set the variables itself), records what was found and judges nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: netbench's option that makes rank 0's MPI print its selection.
NETBENCH_OPTION = "--transport-evidence"
#: UCX transports within a node: a configuration of these only carries no network traffic.
UCX_SHARED_MEMORY = frozenset({"self", "sysv", "posix", "cma", "knem", "xpmem"})
#: Any library's shared-memory transport (Open MPI's vader/sm; UCX's): a one-node partition's
#: expectation whatever MPI a machine has.
SHARED_MEMORY = r"\b(vader|sm|smcuda|sysv|posix|cma|knem|xpmem)\b"
LOCALITIES = ("node", "network")

_BML = re.compile(r"^\[(?P<host>[^:\]\s]+):\d+\] mca: bml: Using (?P<btl>\S+) btl for send to "
                  r"\[\[\d+,\d+\],(?P<peer>\d+)\] on node (?P<peer_host>\S+)", re.M)
_UCX = re.compile(r"UCX\s+INFO\s+ep_cfg\[\d+\]: tag\((?P<lanes>[^)]*)\)")


class TransportError(ValueError):
    """A partition's `transport` declaration that cannot be used (one line naming the fix)."""


@dataclass(frozen=True)
class Carrier:
    #: the BTL ("vader", "tcp") or "ucx:" and UCX's tag transports ("ucx:sysv+cma", "ucx:tcp")
    name: str
    #: "node" or "network"
    locality: str
    #: the line that says it
    evidence: str


@dataclass
class Transport:
    carriers: list[Carrier] = field(default_factory=list)

    def names(self, locality: str | None = None) -> list[str]:
        return sorted({c.name for c in self.carriers
                       if locality is None or c.locality == locality})

    def describe(self) -> str:
        """One line: "vader", "tcp (network), vader (node)", or "unknown" with the reason."""
        if not self.carriers:
            return ("unknown: no selection lines of Open MPI's bml or UCX in the job's output "
                    f"(netbench {NETBENCH_OPTION})")
        localities = {c.locality for c in self.carriers}
        if len(localities) == 1:
            return ", ".join(self.names())
        return ", ".join(f"{name} ({locality})" for locality in LOCALITIES
                         for name in self.names(locality))


def parse(text: str) -> Transport:
    """The carriers named in a job's output (its stdout and stderr, in any order)."""
    carriers: dict[tuple[str, str], Carrier] = {}
    for match in _BML.finditer(text):
        if match["btl"] == "self":
            continue
        locality = "node" if match["peer_host"] == match["host"] else "network"
        carriers.setdefault((match["btl"], locality),
                            Carrier(match["btl"], locality, match.group(0)))
    for match in _UCX.finditer(text):
        transports = list(dict.fromkeys(lane.split("/")[0] for lane in match["lanes"].split()))
        if "self" in transports:
            continue  # rank 0's endpoint to itself
        locality = "node" if set(transports) <= UCX_SHARED_MEMORY else "network"
        name = "ucx:" + "+".join(transports)
        line = text[text.rfind("\n", 0, match.start()) + 1:text.find("\n", match.end())]
        carriers.setdefault((name, locality), Carrier(name, locality, line.strip()))
    return Transport(list(carriers.values()))


def expectation(extras: Mapping, environ: str) -> str | dict[str, str] | None:
    """What `extras["transport"]` declares for the programming environment `environ` (None: not
    judged), validated: a regular expression, or one per locality."""
    declared = (extras or {}).get("transport")
    if declared is None:
        return None
    where = f"extras.transport[{environ!r}]"
    if not isinstance(declared, Mapping):
        raise TransportError(f"extras.transport: expected a mapping of programming environment "
                             f"to a regular expression, got {declared!r}")
    value = declared.get(environ)
    if value is None:
        return None
    rules = {"any": value} if isinstance(value, str) else value
    if not isinstance(rules, Mapping) or not rules or not set(rules) <= {"any", *LOCALITIES}:
        raise TransportError(f"{where}: expected a regular expression or a mapping with the keys "
                             f"'node' and/or 'network', got {value!r}")
    for key, pattern in rules.items():
        try:
            re.compile(pattern)
        except (re.error, TypeError) as err:
            raise TransportError(f"{where}{'' if key == 'any' else f'[{key!r}]'}: "
                                 f"{pattern!r} is not a regular expression ({err})") from None
    return value


def problems(transport: Transport, expected: str | Mapping[str, str] | None,
             across_nodes: bool) -> list[str]:
    """Why the run was not carried as the partition expects (empty: it was, or nothing is
    declared, or the output names no carrier)."""
    if expected is None or not transport.carriers:
        return []
    rules = {"any": expected} if isinstance(expected, str) else dict(expected)
    for key, pattern in rules.items():
        judged = [c for c in transport.carriers if key == "any" or c.locality == key]
        wrong = sorted({c.name for c in judged if not re.search(pattern, c.name)})
        if wrong:
            between = {"any": "", "node": " within a node", "network": " between nodes"}[key]
            return [f"carried by {', '.join(wrong)}{between}; this partition expects "
                    f"{pattern} (extras.transport)"]
    if "network" in rules and across_nodes and not transport.names("network"):
        return [f"carried by {', '.join(transport.names())} between nodes, none of them a "
                f"network transport; this partition expects {rules['network']} "
                f"(extras.transport)"]
    return []


def judge(test, across_nodes: bool) -> tuple[str, list[str]]:
    """A check's transport (one line, for its `transport` variable) and why it fails the
    partition's expectation, from the job's own stdout and stderr."""
    text = ""
    for name in (test.job.stdout, test.job.stderr):
        try:
            with open(f"{test.stagedir}/{name}", errors="replace") as output:
                text += output.read() + "\n"
        except OSError:
            pass
    found = parse(text)
    try:
        expected = expectation(test.current_partition.extras, test.current_environ.name)
    except TransportError as err:
        return found.describe(), [str(err)]
    return found.describe(), problems(found, expected, across_nodes)

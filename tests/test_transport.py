"""Which transport carried a run (fabricsuite.data.transport), read from the whole output of real
`netbench pingpong --transport-evidence` jobs (tests/data/transport/README.md says how they were
taken): Open MPI's bml lines on stderr, UCX's ep_cfg lines on stdout."""

from pathlib import Path

import pytest

from fabricsuite.data import transport
from fabricsuite.data.transport import SHARED_MEMORY, TransportError

DATA = Path(__file__).resolve().parent / "data" / "transport"


def job_output(case: str) -> str:
    """The job's stdout and stderr, as the check reads them."""
    return (DATA / f"{case}.out").read_text() + "\n" + (DATA / f"{case}.err").read_text()


@pytest.mark.parametrize("case, carried, locality", [
    ("ompi-default", "vader", "node"),     # Open MPI ob1, shared memory
    ("ompi-tcp", "tcp", "node"),           # OMPI_MCA_btl=self,tcp: the loopback, same node
    ("mpich-default", "ucx:sysv+cma", "node"),
    ("mpich-tcp", "ucx:tcp", "network"),   # UCX_TLS=tcp,self
])
def test_the_carrier_is_read_from_the_mpi_s_own_lines(case, carried, locality):
    found = transport.parse(job_output(case))
    assert [(c.name, c.locality) for c in found.carriers] == [(carried, locality)]
    assert found.describe() == carried
    # the evidence is the library's line itself, never rank 0's endpoint to itself
    evidence = found.carriers[0].evidence
    assert ("bml: Using" in evidence) if case.startswith("ompi") else ("ep_cfg" in evidence)
    assert "self/" not in evidence


@pytest.mark.parametrize("case, wrong", [("ompi-tcp", "tcp"), ("mpich-tcp", "ucx:tcp")])
def test_tcp_on_one_node_fails_naming_it(case, wrong):
    found = transport.parse(job_output(case))
    (problem,) = transport.problems(found, SHARED_MEMORY, across_nodes=False)
    assert problem.startswith(f"carried by {wrong}; this partition expects ")


@pytest.mark.parametrize("case", ["ompi-default", "mpich-default"])
def test_shared_memory_on_one_node_passes(case):
    assert transport.problems(transport.parse(job_output(case)), SHARED_MEMORY, False) == []


def test_nothing_declared_or_nothing_said_judges_nothing():
    assert transport.problems(transport.parse(job_output("ompi-tcp")), None, False) == []
    # an output without the lines (another MPI; the environment silenced them): recorded as
    # unknown, with the reason, never failed on a guess
    silent = transport.parse("# netbench 0.1.0 pingpong\n# status: ok\n")
    assert silent.carriers == [] and silent.describe().startswith("unknown: no selection lines")
    assert transport.problems(silent, "tcp", True) == []


# Two nodes: rank 0 on n1 reaches rank 1 on n1 by shared memory and rank 2 on n2 by TCP (the
# lines as Open MPI prints them; the host names are what make a peer local).
TWO_NODES = """\
[n1:4242] mca: bml: Using vader btl for send to [[9,1],1] on node n1
[n1:4242] mca: bml: Using self btl for send to [[9,1],0] on node n1
[n1:4242] mca: bml: Using tcp btl for send to [[9,1],2] on node n2
"""


def test_a_locality_rule_judges_only_the_peers_of_that_locality():
    found = transport.parse(TWO_NODES)
    assert found.describe() == "vader (node), tcp (network)"
    assert transport.problems(found, {"network": "tcp"}, True) == []
    (problem,) = transport.problems(found, {"network": "openib|ucx"}, True)
    assert problem.startswith("carried by tcp between nodes; this partition expects openib|ucx")
    # one rule for every carrier: the shared memory within the node fails it
    assert transport.problems(found, "tcp", True)[0].startswith("carried by vader; ")


def test_shared_memory_between_nodes_fails_a_network_rule():
    # MPICH's UCX across network namespaces: every endpoint by shared memory, the job on two
    # nodes (the emulated cluster's known trap without UCX_TLS=tcp,self)
    found = transport.parse(job_output("mpich-default"))
    (problem,) = transport.problems(found, {"network": "tcp"}, across_nodes=True)
    assert problem == ("carried by ucx:sysv+cma between nodes, none of them a network transport; "
                       "this partition expects tcp (extras.transport)")
    assert transport.problems(found, {"network": "tcp"}, across_nodes=False) == []


@pytest.mark.parametrize("declared, words", [
    ("tcp", "expected a mapping of programming environment"),
    ({"openmpi": ["tcp"]}, "'node' and/or 'network'"),
    ({"openmpi": {"fabric": "tcp"}}, "'node' and/or 'network'"),
    ({"openmpi": "tcp("}, "is not a regular expression"),
    ({"openmpi": {"network": "("}}, "extras.transport['openmpi']['network']"),
])
def test_a_bad_declaration_is_one_line_naming_the_fix(declared, words):
    with pytest.raises(TransportError) as caught:
        transport.expectation({"transport": declared}, "openmpi")
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_an_environment_not_declared_is_not_judged():
    extras = {"transport": {"mpich": "tcp"}}
    assert transport.expectation(extras, "openmpi") is None
    assert transport.expectation(extras, "mpich") == "tcp"
    assert transport.expectation({}, "mpich") is None


def test_the_outcome_says_what_carried_the_cases():
    from fabricsuite.commands.session import transport_lines

    cases = [{"system": "local", "partition": "default", "environ": e, "transport": t}
             for e, t in [("openmpi", "vader"), ("openmpi", "vader"), ("mpich", "ucx:tcp")]]
    cases.append({"system": "local", "partition": "default", "environ": "openmpi"})  # external
    assert transport_lines(cases) == [
        "carried by (transport): local:default mpich ucx:tcp (1 case); "
        "local:default openmpi vader (2 cases)"]
    assert transport_lines(cases[3:]) == []

"""The fabric's links against their promise, before any benchmark: seconds, no MPI.

Test plan. FabricLinks reads every link of every node of a partition with the `mpi` feature
as the operating system reports it (config/launchers/read-counters, source `links`: InfiniBand
and RoCE ports' rate, width, state; interfaces' speed and state; a tbf shaper's rate), one task
per node (the partition's `extras["nodes"]` through srun on Slurm; this machine alone under the
local scheduler), and judges them against the partition's contract, `extras["fabric"]["links"]`
(fabricsuite.data.links): a declared port that is missing, down, narrower or slower than declared,
or unlike the same port on most of its peers, fails the check as `LINK DEGRADED <node> <port>:
<what it runs at>, declared <the promise>`. The session's outcome counts it as a finding of its
own (exit 1: the fabric misses its promise; docs/verdicts.md). Without a contract only the
comparison with the peers applies, and a partition of one node passes on what it read: the
check's `links` variable keeps the evidence either way.
"""

import shlex

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, sanity_function, variable
from reframe.core.exceptions import EnvironError, SanityError

from fabricsuite import SLURM_SCHEDULERS
from fabricsuite.checks.rfm_netbench import READ_COUNTERS
from fabricsuite.data import links

#: One reading per node, "%n" the node's name (read-counters fills it in).
READING = "links-%n.txt"


@rfm.simple_test
class FabricLinks(rfm.RunOnlyRegressionTest):
    descr = "Every node's links as its OS reports them, against the partition's declared links"
    valid_systems = ["+mpi"]
    valid_prog_environs = ["+mpi"]
    time_limit = "5m"
    tags = {"links"}
    #: The links read, one line: "node1 net/eth0 1 Gb/s, node2 net/eth0 0.5 Gb/s".
    links = variable(str, value="", loggable=True)
    #: The findings against the contract and the peers, "; "-joined ("" for none).
    link_findings = variable(str, value="", loggable=True)

    @run_after("setup")
    def read_every_node(self):
        # The links are the partition's, not an environment's; read in each (seconds, no MPI),
        # since a skip in one would be that environment's coverage lost, never a pass.
        try:
            self._contract = links.contract(self.current_partition.extras)
        except links.ContractError as err:
            raise EnvironError(str(err)) from None
        if self.current_partition.scheduler.registered_name in SLURM_SCHEDULERS:
            self.num_tasks = int(self.current_partition.extras.get("nodes", 1))
            self.num_tasks_per_node = 1
        else:
            self.num_tasks = 1
            self.job.launcher = getlauncher("local")()
        self.executable = shlex.quote(str(READ_COUNTERS))
        self.executable_opts = [shlex.quote(READING), "links"]
        self.prerun_cmds = ["rm -f " + READING.replace("%n", "*")]

    @sanity_function
    def links_meet_their_promise(self):
        nodes = links.read(self.stagedir, READING)
        if not nodes:
            raise SanityError("no node wrote its links (read-counters did not run)")
        if self.current_partition.scheduler.registered_name in SLURM_SCHEDULERS and \
                len(nodes) < self.num_tasks:
            raise SanityError(f"{len(nodes)} of {self.num_tasks} nodes wrote their links")
        self.links = links.describe(nodes, self._contract)
        try:
            found = links.findings(nodes, self._contract)
        except links.ContractError as err:
            raise SanityError(str(err)) from None
        self.link_findings = "; ".join(found)
        if found:
            raise SanityError(self.link_findings)
        return True

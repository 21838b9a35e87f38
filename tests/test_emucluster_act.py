"""Integration (issue 52): the suspect step and the drain, end to end on an emulated Slurm
cluster of 4 nodes at 1 Gbit.

The partition's references for NetbenchPingPongBandwidth (reference/emucluster.yaml) as if taken
on nodes 1 and 2 (their `_statistics` name them, as `fabricsuite baseline` records). Node 3's
link at 700 Mbit (30 % slower: the contract is tested here, not the sensitivity, which
test_emucluster.py measures at 10 %; at 15 % a CI run once passed the re-test);
`fabricsuite nightly --retest-suspects` on nodes 3 and 4
(`-J--nodelist`): the pair fails, its confirmation on nodes 1-2 passes, so the session's verdict
is a NODE OUTLIER on two new nodes that the pair cannot tell apart, suspected. The nightly then
re-tests each against a known node, in its mate's place: node 3 with node 2 fails (confirmed),
node 4 with node 1 passes (cleared). `fabricsuite
act --mode drain` drains node 3 alone, with the suite's reason. bench/node_outliers_emucluster.py
--act runs the same as trials.
"""

import json
import os
import signal

import emu_support
import pytest
import yaml
from emu_support import BIN

from fabricsuite import REFERENCE_DIR
from fabricsuite.commands.emucluster import QUICK

PREFIX = emu_support.prefix("fsa")
pytestmark = emu_support.marks(PREFIX)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster-act")
    yield from emu_support.cluster(state, PREFIX, emu_support.port_base(44000), nodes=4)


def test_a_suspect_pair_is_re_tested_and_only_its_slow_node_drained(cluster, tmp_path):
    nodes = [f"{PREFIX}{i}" for i in range(1, 5)]
    data = yaml.safe_load((REFERENCE_DIR / "emucluster.yaml").read_text())
    for key, entry in data["_statistics"].items():
        if key.startswith("NetbenchPingPongBandwidth emucluster:nodes openmpi "):
            entry["nodes"] = nodes[:2]
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(yaml.safe_dump(data))

    def nightly(results):
        try:
            cluster("rate", "700mbit", "3")
            night = cluster("exec", str(BIN / "fabricsuite"), "nightly", "--system",
                            "emucluster:nodes", "--results", str(results), "--retest-suspects",
                            "--", "-n", "NetbenchPingPongBandwidth%distance=other-node", "-p",
                            "openmpi", f"-J--nodelist={nodes[2]},{nodes[3]}", "-S",
                            "confirm_pause_s=1", *QUICK, check=False,
                            extra_env={"RFM_REFERENCE_PREFIX": str(refs), "MPIEXEC_TIMEOUT": "90"})
        finally:
            cluster("rate", "1gbit")
        said = night.stdout + night.stderr
        # on a failure: the nightly's lines about the suspects, the re-tests and the verdicts
        told = "\n".join(line for line in said.splitlines()
                         if "suspect " in line or "re-test" in line or "NODE OUTLIER" in line
                         or "INTERFERENCE" in line or "disturbed" in line
                         or line.lstrip().startswith(("P: ", "outcome:", "FAILED", "PASSED",
                                                      "BROKEN", "REGRESSION")))
        return said, told

    results = tmp_path / "results"
    said, told = nightly(results)
    if "outcome: BROKEN" in said and "interference, not the fabric" in said:
        # Another process took a rank's CPU on the 2-core host during the confirmation on
        # nodes 1-2 too: the suite rightly calls a disturbed failure interference, and names
        # no node to drain. Measured once more. (A first run disturbed alone is a suspected
        # NODE OUTLIER, re-tested as below: CI once passed it, fabricsuite.data.session_verdict.)
        for path in (results / "findings").glob("*.json"):
            assert "node-outlier" not in path.read_text(), told
        print(f"the first session was disturbed, measuring again:\n{told}")
        results = tmp_path / "results-again"
        said, told = nightly(results)
    # each against the known node in its mate's place (node 3 with node 2, node 4 with node 1:
    # on the emulation also a pair that does not share a core)
    assert f"re-testing suspect {nodes[2]} against {nodes[1]}" in said, told
    assert f"suspect {nodes[2]} re-tested against {nodes[1]}: confirmed" in said, told
    assert f"suspect {nodes[3]} re-tested against {nodes[0]}: cleared" in said, told
    # the re-tests' own outcome, after the session's
    assert (f"outcome after the re-test of suspects: 1 confirmed ({nodes[2]}); 1 cleared "
            f"({nodes[3]})") in said, told
    (path,) = (results / "findings").glob("*.json")
    doc = json.loads(path.read_text())
    assert "pending" not in doc  # the nightly's own findings replaced its pending file
    assert [(f["kind"], f["confidence"], f["nodes"]) for f in doc["findings"]] == [
        ("node-outlier", "confirmed", nodes[2])], doc
    assert [r["result"] for r in doc["retests"]] == ["confirmed", "cleared"], doc
    try:
        acted = cluster("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                        "--max-fraction", "0.5", "--results", str(results), check=False)
        assert acted.returncode == 0, acted.stdout + acted.stderr
        state = json.loads(cluster("exec", "sinfo", "--json").stdout)["nodes"]
        drained = {n["name"]: n["reason"] for n in state if "DRAIN" in n["state_flags"]}
        assert list(drained) == [nodes[2]], (drained, acted.stdout)
        assert drained[nodes[2]].startswith("fabricsuite: NODE OUTLIER "
                                            "NetbenchPingPongBandwidth "), drained
        # an administrator returns node 3 to service; the same findings acted on again (the
        # cron line `fabricsuite nightly; fabricsuite act` after a nightly that died): refused,
        # the node stays in service
        cluster("exec", "scontrol", "update", f"NodeName={nodes[2]}", "State=RESUME")
        again = cluster("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                        "--max-fraction", "0.5", "--results", str(results), check=False)
        assert again.returncode == 1 and "was acted on already" in again.stdout, again.stdout
        state = json.loads(cluster("exec", "sinfo", "--json").stdout)["nodes"]
        assert not [n for n in state if "DRAIN" in n["state_flags"]], state
        # Slurm's controller hung: one line, exit 2, nothing done
        pid = int((cluster.state / "run" / "slurmctld.pid").read_text())
        os.kill(pid, signal.SIGSTOP)
        try:
            hung = cluster("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                           "--force", "after repair", "--results", str(results), check=False)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert hung.returncode == 2 and len(hung.stderr.strip().splitlines()) == 1, hung
        assert "slurmctld" in hung.stderr, hung.stderr
    finally:
        for node in nodes:
            cluster("exec", "scontrol", "update", f"NodeName={node}", "State=RESUME",
                    check=False)

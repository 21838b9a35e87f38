"""Integration: the emulated Slurm cluster (ci/emucluster.sh) with a known link rate.

Brings up 4 nodes (network namespaces on a bridge, Slurm with one slurmd per node) and:
- ground truth: with `tc tbf` at 1 Gbit, 500 Mbit and 100 Mbit on the node links, netbench's
  flood G between two nodes recovers the imposed rate within 10 %, and its ping-pong bandwidth at
  1 MiB lies between what wire time plus the hosts' unshaped cost allow and 10 % above the rate,
  through srun, with both MPIs, and the transport is the network (not shared memory);
- the point-to-point checks pass through sbatch/srun at 2 nodes against
  reference/emucluster.yaml (taken at 1 Gbit); the after-upgrade story (800 Mbit fails, naming
  the variable, after confirmation; nightly, compare and report) is told by
  test_workflows_nightly_compare_and_report (the rates at 900 and 800 Mbit over many trials:
  bench/verdicts_emucluster.py);
- the multi-rank checks at 1, 2 and 4 nodes through Slurm: the timed dense check at 2 nodes
  against its references (scale 2x1), and the mechanics in validation mode at 2 and 4 nodes
  (launch, placement on the requested nodes, every byte checked; 4 nodes share 2 cores, so the
  timed case is skipped there unless asked for, and then its 4x1 references have wide bounds;
  1 node of 1 core runs its 2 ranks in validation mode only).
The cluster is torn down afterwards, also when a test fails.
"""

import json
import re
import subprocess
from pathlib import Path

import emu_support
import pytest
import yaml
from emu_support import BIN, run_reframe

from fabricsuite import REPO_ROOT
from fabricsuite.checks.judged_check import CONFIRM_ROUNDS, confirm_pause
from fabricsuite.commands.emucluster import QUICK

PREFIX = emu_support.prefix("fst")  # unique per test run: never touches another cluster
pytestmark = emu_support.marks(PREFIX, (*emu_support.TOOLS, "mpicc.mpich"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster")
    for emu in emu_support.cluster(state, PREFIX, emu_support.port_base(20000), nodes=4):
        yield emu, state


@pytest.fixture(scope="module")
def programs(netbench_program):
    """netbench built with each MPI (a shared file system: every namespace sees it)."""
    return {mpi: Path(netbench_program(mpi)) for mpi in ("openmpi", "mpich")}


MPI_ENV = {
    "openmpi": {"SLURM_MPI_TYPE": "pmix", "OMPI_MCA_btl": "tcp,self",
                "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"},
    "mpich": {"SLURM_MPI_TYPE": "pmi2", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "eth0"},
}


def srun_netbench(emu, program, mpi, tmp_path, *args):
    out = tmp_path / f"{mpi}-{args[0]}.json"
    out.unlink(missing_ok=True)
    # A 1-minute limit: these runs take seconds, and a run that hangs in MPI_Finalize (MPICH over
    # UCX's TCP transport, openucx/ucx#8738) is ended by Slurm instead of by the test's timeout.
    # netbench's watchdog at 15 s (these runs take 1-4 s) ends such a hang first: MPI_Finalize
    # gets what is left of the 15 s, not its default 30 (a hang cost this test 30 s in the CI of
    # 2026-12-07: MPICH 51 s against 21 s in three other runs; issue 65).
    proc = emu("exec", "srun", "-N2", "-n2", "--ntasks-per-node=1", "--time=1", str(program),
               *args, "--timeout", "15", "--json-file", str(out), extra_env=MPI_ENV[mpi],
               check=False)
    if proc.returncode != 0:
        # Only that hang is forgiven: the measurement finished ("# status:" is printed after
        # the last table, before MPI_Finalize) and then Slurm ended the step at its time limit,
        # or netbench's own watchdog did, in MPI_Finalize (CI of 2026-11-26, MPICH).
        finished = "\n# status: " in proc.stdout and out.exists()
        hung = "DUE TO TIME LIMIT" in proc.stderr or re.search(
            r"MPI_Finalize did not return within \d+ s after the result was complete",
            proc.stderr)
        assert finished and hung, (
            f"srun {args[0]} failed ({proc.returncode}): {proc.stderr[-3000:]}")
        print(f"{mpi} {args[0]}: finished its measurement, then hung in MPI_Finalize until the "
              "time limit or the watchdog (openucx/ucx#8738); the results stand")
    result = json.loads(out.read_text())
    hosts = [r["host"] for r in result["ranks"]]
    assert len(set(hosts)) == 2, f"both ranks on one node: {hosts}\n{proc.stdout}"
    return result


# Imposed rate -> bytes per second (tc: 1gbit = 10^9 bit/s).
#: The imposed rates, a decade apart (500 Mbit between them added 25 s of CI and nothing a decade
#: does not show: issue 65).
RATES = {"1gbit": 125e6, "100mbit": 12.5e6}


#: A ping-pong of 1 MiB pays, besides the wire time, the hosts' own cost of a message (TCP
#: through the kernel, MPI's rendezvous), which shaping does not hide: it is measured on the
#: unshaped link right before each shaped run, and the shaped figure must reach this share of
#: what wire time + host cost allow. The share is this VM's slow phases: MPICH at 1 Gbit
#: measured 0.89 and 0.93 of the rate in two runs a few minutes apart (model 0.95); a link
#: shaped to half the rate asked for lands near 0.5, far below.
PINGPONG_SHARE_OF_MODEL = 0.85


def pingpong_model(rate_Bps: float, host_seconds: float, size: int = 1024 * 1024) -> float:
    """Expected ping-pong bandwidth / rate: the wire time plus the host's unhidden cost."""
    wire = size / rate_Bps
    return wire / (wire + host_seconds)


def test_the_pingpong_floor_admits_a_slower_host_and_refuses_half_the_rate():
    mib = 1024 * 1024
    # The CI host's MPICH measured 0.833 of 1 Gbit twice (2026-11-26), as a host cost of about
    # 1.7 ms per 1 MiB message would explain (600 MB/s unshaped); a flat floor of 0.85 failed it.
    slow_host = mib / 600e6
    assert pingpong_model(125e6, slow_host) == pytest.approx(0.83, abs=0.01)
    assert PINGPONG_SHARE_OF_MODEL * pingpong_model(125e6, slow_host) < 0.833
    # A link shaped to 500 Mbit when 1 Gbit was asked for: measured against 1 Gbit it is half
    # the model at 500 Mbit, whatever the host.
    for host in (slow_host, mib / 2e9, 0.0):
        half_rate = 0.5 * pingpong_model(62.5e6, host)
        assert half_rate < PINGPONG_SHARE_OF_MODEL * pingpong_model(125e6, host) - 0.2


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_bandwidth_and_G_recover_the_imposed_rate(cluster, programs, mpi, tmp_path):
    emu, _state = cluster
    mib = 1024 * 1024

    def pingpong(*args):
        bibw = srun_netbench(emu, programs[mpi], mpi, tmp_path, "bibw", "--sizes", "8,1M",
                             "--repetitions", "5", *args)
        rows = {r["size_bytes"]: r for r in bibw["tables"]["bibw"]}
        # The transport is the network: shared memory would answer in well under 2 us.
        assert rows[8]["latency_median_us"] > 2.0, rows[8]
        return rows[mib]["bandwidth_median_MBps"] * 1e6

    def measure(rate: str) -> tuple[float, float, float]:
        """(ping-pong / rate, its floor from the model, 1/G / rate)."""
        emu("rate", "none")
        host_seconds = mib / pingpong()
        emu("rate", rate)
        bandwidth = pingpong()
        flood = srun_netbench(emu, programs[mpi], mpi, tmp_path, "flood", "--sizes",
                              "64K,128K,256K,512K,1M", "--queue-depths", "4",
                              "--repetitions", "5", "--time-cap-ms", "100")
        G = flood["summary"]["G_ns_per_byte"]
        floor = PINGPONG_SHARE_OF_MODEL * pingpong_model(RATES[rate], host_seconds)
        return bandwidth / RATES[rate], floor, 1e9 / G / RATES[rate]

    # 1/G from the flood fit is the direct estimate of the rate: 10 %. Ping-pong at 1 MiB also
    # pays the hosts' cost of a message, a tenth of a core at 1 Gbit, which differs by host and
    # MPI (MPICH: 0.89 of 1 Gbit here, 0.83 on the CI host, both measurements alike) and grows
    # in this VM's slow phases: its floor comes from the unshaped link (pingpong_model).
    def within(ratios):
        by_bandwidth, floor, by_G = ratios
        return floor <= by_bandwidth <= 1.10 and abs(by_G - 1.0) <= 0.10

    recovered = {}
    try:
        for rate in RATES:
            recovered[rate] = measure(rate)
            # A slow phase can cost a few percent: a rate off its bounds is measured once more,
            # and of each figure the measurement nearer its bound counts (a slow phase moved one
            # figure in one measurement and the other in the next, 2026-11-26: (0.97, 0.88)
            # then (0.84, 1.00)); a wrong transport or a wrong shaping fails both.
            if not within(recovered[rate]):
                print(f"{mpi} {rate}: {recovered[rate]} outside its bounds, measuring again")
                again = measure(rate)
                first = recovered[rate]
                pingpong_pair = max((first, again), key=lambda m: m[0] - m[1])
                by_G = min(first[2], again[2], key=lambda ratio: abs(ratio - 1.0))
                recovered[rate] = (pingpong_pair[0], pingpong_pair[1], by_G)
    finally:
        emu("rate", "1gbit", check=False)
    print(f"{mpi}: measured / imposed rate (ping-pong 1 MiB, its floor, 1/G): {recovered}")
    for rate, (by_bandwidth, floor, by_G) in recovered.items():
        assert floor <= by_bandwidth <= 1.10, (rate, recovered)
        assert by_G == pytest.approx(1.0, abs=0.10), (rate, recovered)


#: netbench's 11 repetitions of each size up to 4 MiB take 14.5 s at 1 Gbit (2 and 4 MiB
#: dominate); 5 repetitions up to 1 MiB give the same 1 MiB median and peak (at 32 KiB, repeating
#: within 0.01 %) in a fraction of it: CI runs about 45 such jobs, so the point-to-point runs here
#: use these (the sizes the check requires follow).




def test_pt2pt_checks_pass_at_2_nodes_through_srun(cluster, tmp_path):
    emu, _state = cluster
    checks = ["-c", "checks/pt2pt.py", "-n", "NetbenchPingPong%distance=other-node",
              "-n", "NetbenchPingPongBandwidth%distance=other-node"]
    # The product's confirmation rule (CONFIRM_ROUNDS, each pause longer), not the tests' single
    # round: a healthy latency measured 2.45x its reference in two rounds 10 s apart on the CI
    # host (2026-12-02), the slow phase this VM kind is known for, which lasts minutes.
    proc = run_reframe(emu, tmp_path / "good", *checks, *QUICK,
                       f"--max-retries={CONFIRM_ROUNDS}")
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert re.search(r"Ran 6/6 test case", proc.stdout), proc.stdout[-3000:]
    # the ranks really ran on two nodes, through srun
    outs = [p for p in (tmp_path / "good" / "output").rglob("netbench.json")
            if p.parent.name.startswith("NetbenchPingPongBandwidth")]
    assert outs
    for out in outs:
        ranks = json.loads(out.read_text())["ranks"]
        assert len({r["host"] for r in ranks}) == 2, ranks
        script = (out.parent / "rfm_job.sh").read_text()
        assert "#SBATCH --ntasks-per-node=1" in script and "\nsrun " in script, script
    # each variable's floor as the partition declares it: latency (the host's TCP path) 35 %,
    # bandwidth (the shaped link) 7 %; recorded with the run for `fabricsuite baseline`
    report = json.loads(next((tmp_path / "good" / "reports").glob("*.json")).read_text())
    floors = {c["name"].split(" ")[0]: c["perf_floors"]
              for run in report["runs"] for c in run["testcases"] if c.get("perf_floors")}
    assert set(floors["NetbenchPingPong"].values()) == {0.35}, floors
    assert set(floors["NetbenchPingPongBandwidth"].values()) == {0.07}, floors
    # the floors of what the run judged: no promise declared, so no promised figure
    assert set(floors["NetbenchPingPong"]) == {"latency_8B_median_us", "latency_8B_min_us"}
    # A slower link failing the bandwidth check (and only it) is
    # test_workflows_nightly_compare_and_report.


#: The timed dense check measured at its judged size alone, twice, 2 exchanges per timed loop
#: (the mechanics and the reference lookup are the point, not the figure): 71 s of CI at 2 nodes
#: with every size to 1 MiB, 5 repetitions, then 21.6 s with the check's 16 exchanges a loop
#: (issue 65); its sanity takes the sizes the run reports.
DENSE_QUICK = ("-S", "NetbenchDense.netbench_options=--phases,16,--seed,1,--min-size,1M,"
                     "--max-size,1M,--repetitions,2", "-S", "NetbenchDense.min_exchanges=2")


def test_multirank_mechanics_at_1_2_and_4_nodes(cluster, tmp_path):
    emu, _state = cluster
    # Mechanics: the timed case is judged against no reference (its verdict over identical and
    # slower runs is bench/verdicts_emucluster.py --families dense; the 4x1 lookup is below).
    no_refs = tmp_path / "no-refs"
    no_refs.mkdir()
    proc = run_reframe(emu, tmp_path / "mech", "-c", "checks/dense.py", "-c",
                       "checks/collectives.py", "-n", "Validation",
                       # per-core: per-node, on one-core nodes the same, is skipped saying so
                       "-n", "NetbenchDense%node_count=2%placement=per-core",
                       "-n", "NetbenchDense%node_count=4",
                       "-p", "openmpi", "-S", "require_reference=false", *DENSE_QUICK,
                       extra_env={"RFM_REFERENCE_PREFIX": str(no_refs)})
    assert proc.returncode == 0, proc.stdout[-5000:]
    # 1 node has 1 core: a multi-rank check needs 2 ranks, so that case is skipped with the reason
    assert "needs at least 2 ranks" in proc.stdout
    # 4 nodes share 2 cores: the timed case is skipped, saying why
    assert "above 2 nodes the nodes share cores" in proc.stdout
    report = json.loads(next((tmp_path / "mech" / "reports").glob("*.json")).read_text())
    passed = {(c["name"].split(" ")[0], c["name"].split("%node_count=")[1].split(" ")[0])
              for run in report["runs"] for c in run["testcases"]
              if c["result"] == "pass" and "%node_count=" in c["name"]}
    for check in ("NetbenchDenseValidation", "NetbenchCollectivesValidation"):
        for nodes in ("2", "4"):
            assert (check, nodes) in passed, (check, nodes, sorted(passed))
    # the timed dense check at 2 nodes ran, with sound figures
    assert ("NetbenchDense", "2") in passed, sorted(passed)
    outs = [p for p in (tmp_path / "mech" / "output").rglob("netbench.json")
            if "Validation" in p.parent.name]
    hosts_seen = set()
    for out in outs:
        result = json.loads(out.read_text())
        hosts = {r["host"] for r in result["ranks"]}
        assert len(hosts) == result["parameters"]["ranks"], "one rank per emulated node"
        hosts_seen |= hosts
    assert hosts_seen == {f"{PREFIX}{i}" for i in range(1, 5)}


def test_multirank_at_1_node_and_reference_lookup_at_4_nodes(cluster, tmp_path):
    emu, _state = cluster
    # 1 node: an emulated node has 1 core, so 2 ranks share it; validation times nothing and
    # accepts that (a timed check would fail its placement sanity).
    proc = run_reframe(emu, tmp_path / "one", "-c", "checks/dense.py", "-c",
                       "checks/collectives.py", "-n", "Validation%node_count=1%placement=per-core",
                       "-S", "ranks_per_node=2", "-p", "openmpi")
    assert proc.returncode == 0, proc.stdout[-5000:]
    assert re.search(r"Ran 3/3 test case", proc.stdout), proc.stdout[-3000:]
    outs = list((tmp_path / "one" / "output").rglob("netbench.json"))
    assert len(outs) == 2
    for out in outs:
        ranks = json.loads(out.read_text())["ranks"]
        assert len(ranks) == 2 and len({r["host"] for r in ranks}) == 1, ranks

    # 4 nodes, timed anyway: the verdict uses the 4x1 references (wide bounds: mechanics only)
    proc = run_reframe(emu, tmp_path / "four", "-c", "checks/dense.py",
                       "-n", "NetbenchDense%node_count=4%placement=per-core",
                       "-S", "timing_on_shared_cores=true", *DENSE_QUICK, "-p", "openmpi")
    assert proc.returncode == 0, proc.stdout[-5000:]
    perflog = next((tmp_path / "four" / "perflogs").rglob("NetbenchDense.log")).read_text()
    header, row = perflog.splitlines()[0].split("|"), perflog.splitlines()[-1].split("|")
    logged = dict(zip(header, row, strict=True))
    assert logged["num_tasks"] == "4"
    assert "%node_count=4" in logged["display_name"]
    assert float(logged["aapc_bandwidth_1MiB_MBps_ref"]) == pytest.approx(52.855)
    assert float(logged["aapc_bandwidth_1MiB_MBps_lower_thres"]) == pytest.approx(-0.9)


def test_pt2pt_check_through_mpirun_and_the_rsh_agent(cluster, tmp_path):
    """Without Slurm: the partition emucluster:mpirun starts Open MPI's orted and MPICH's hydra
    proxies through the cluster's rsh stand-in (nsagent), one rank on each of two nodes, over
    TCP; the bandwidth check passes against the same 1 Gbit references."""
    emu, _state = cluster
    proc = run_reframe(emu, tmp_path / "rsh", "-c", "checks/pt2pt.py", "-p", "openmpi",
                       "-p", "mpich", "-n", "NetbenchPingPongBandwidth%distance=other-node",
                       *QUICK, system="emucluster:mpirun")
    assert proc.returncode == 0, proc.stdout[-5000:]
    outs = list((tmp_path / "rsh" / "output").rglob("netbench.json"))
    assert len(outs) == 2, outs
    for out in outs:
        result = json.loads(out.read_text())
        assert [r["host"] for r in result["ranks"]] == [f"{PREFIX}1", f"{PREFIX}2"]
        script = (out.parent / "rfm_job.sh").read_text()
        assert "mpirun -np 2" in script and "srun" not in script, script


def test_a_link_taken_down_and_up_shows_its_carrier_changes_beside_the_failed_job(cluster,
                                                                                  tmp_path):
    """Issue 29: node 2's link goes down while the bandwidth job measures (after its counters
    were read on both nodes) and comes up once netbench's watchdog has ended the run. The job
    fails (the launcher's status 1, never judged on figures) and its broken line names node 2's
    carrier changes: read on every node of the job (extras.counters nodes "every"), the first
    node's link did not move. Without the fault, this job takes about 5 s (18 sizes x 10
    repetitions), within its 10 s watchdog (20 s until issue 65: the test waits it out)."""
    import threading
    import time

    emu, _state = cluster
    results = tmp_path / "results"
    done = {}
    options = ["-S", "netbench_options=--repetitions,10,--max-size,1M,--timeout,10",
               "-S", "required_sizes=" + ",".join(str(2 ** k) for k in range(3, 21))]
    job = threading.Thread(target=lambda: done.setdefault("proc", run_reframe(
        emu, results, "-c", "checks/pt2pt.py", "-p", "openmpi", "--max-retries=0",
        "-n", "NetbenchPingPongBandwidth%distance=other-node", *options)))
    job.start()
    try:
        deadline = time.monotonic() + 300
        while len(list(results.glob("stage/**/NetbenchPingPongBandwidth*/counters-before-*"))) < 2:
            assert time.monotonic() < deadline and job.is_alive(), "the job never read its counters"
            time.sleep(0.2)
        time.sleep(2)  # MPI is up and measuring
        emu("link", "2", "down")
        while not any("did not end within --timeout" in err.read_text()
                      for err in results.glob("stage/**/NetbenchPingPongBandwidth*/rfm_job.err")):
            assert time.monotonic() < deadline, "netbench's watchdog never ended the run"
            time.sleep(0.5)
    finally:
        emu("link", "2", "up", check=False)
        job.join()
    proc = done["proc"]
    assert proc.returncode != 0, proc.stdout[-3000:]
    report = json.loads(sorted((results / "reports").glob("*.json"))[-1].read_text())
    case = next(c for c in report["runs"][-1]["testcases"]
                if c["name"].startswith("NetbenchPingPongBandwidth"))
    assert case["result"] == "fail" and "launcher exited with status" in case["fail_reason"], case
    # node 2's carrier went and came back (+2); what it could not send meanwhile was dropped
    # (tx_dropped, seen here): every troubled counter is node 2's
    named = case["counters"].split(", ")
    assert f"{PREFIX}2 net eth0 carrier_changes +2" in named, named
    assert all(name.startswith(f"{PREFIX}2 ") for name in named), named
    assert not any(name.startswith(f"{PREFIX}1/") and "carrier" in name
                   for name in case["counter_deltas"]), case["counter_deltas"]
    assert case["counters_not_read"] == "", case["counters_not_read"]
    summary = subprocess.run([str(BIN / "python"), "-m", "fabricsuite.commands.session",
                              sorted((results / "reports").glob("*.json"))[-1]],
                             capture_output=True, text=True, cwd=REPO_ROOT)
    broken = [ln for ln in summary.stdout.splitlines() if "launcher exited" in ln]
    assert broken and f"; counters moved: {case['counters']}" in broken[0], summary.stdout
    print(*broken, sep="\n")


def _assert_regressions_named_with_their_noise_and_shapers(stdout: str) -> None:
    """Each REGRESSION line of a slow session names the variable, both figures and their distance
    in the reference's noise, confirmed; beside each, the shaper of each node's link held the
    packets back (fabricsuite.data.counters: tc on every node of the emulated cluster's jobs)."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip().startswith("REGRESSION")]
    assert lines and all("bandwidth_" in ln and "noise widths" in ln
                         and "confirmed: first run" in ln for ln in lines), lines
    assert all({f"{PREFIX}1", f"{PREFIX}2"} <= set(re.findall(
        r"(\S+) tc eth0 tbf-\w+ overlimits \+\d+", ln.split("; counters moved: ")[-1]))
        for ln in lines), lines


def _compare_and_report_name_the_drop(results: Path, tmp_path: Path) -> None:
    """`fabricsuite compare` of the tags before and after names the bandwidth variables as
    significant regressions and nothing else; `fabricsuite report` draws both series."""
    compare = subprocess.run(
        [str(BIN / "fabricsuite"), "compare", "--system", "emucluster", "--results",
         str(results), "--before-tag", "before", "--after-tag", "after", "--json"],
        capture_output=True, text=True, cwd=REPO_ROOT)
    assert compare.returncode == 1, compare.stdout[-3000:] + compare.stderr
    table = json.loads(compare.stdout)
    significant = {v["variable"] for v in table["variables"] if v["significant"]}
    assert significant == {"bandwidth_1MiB_MBps", "bandwidth_peak_MBps"}, table["variables"]
    # every measurement counts: 2 repeats a session, a failed case once, with its last run
    regressions = [v for v in table["variables"] if v["significant"]]
    # (a run whose ranks waited for their CPUs is set aside, not a sample: at most one on a busy
    # host, before or after: the CI host of 2026-12-02 had one after)
    assert all(v["verdict"] == "regression" and v["n_before"] >= 1 and v["n_after"] >= 1
               and v["n_before"] + v["n_after"] >= 3 for v in regressions), [
        (v["variable"], v["verdict"], v["n_before"], v["n_after"]) for v in regressions]

    page = tmp_path / "report.html"
    report = subprocess.run(
        [str(BIN / "fabricsuite"), "report", "--system", "emucluster", "--results",
         str(results), "-o", str(page)], capture_output=True, text=True, cwd=REPO_ROOT)
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    # the trend of each bandwidth series over the sessions of both tags (its change point needs
    # 6 runs before, 4 passing nightlies more than this test runs: tests/test_report.py marks
    # it on stored sessions)
    drawn = set(re.findall(r'<figure id="trend-\d+" class="trend-figure" data-series="'
                           r'NetbenchPingPongBandwidth emucluster:nodes openmpi other-node '
                           r'(\w+)" data-change-points="\d+"', html))
    assert drawn == {"bandwidth_1MiB_MBps", "bandwidth_peak_MBps"}, drawn


def test_workflows_nightly_compare_and_report(cluster, tmp_path):
    """Issue 13's acceptance, as a new user would, against the shipped references
    (reference/emucluster.yaml, taken at 1 Gbit by `fabricsuite baseline`): a nightly passes
    (exit 0: identical runs raise no false alarm), the links drop to 800 Mbit, one more nightly
    exits 1 naming the bandwidth variables, both figures, the noise widths and the shapers that
    held the packets back, after three confirmation rounds whose pauses grow (issue 12's ground
    truth); `fabricsuite compare` of the two tags names those variables as significant
    regressions and nothing else; `fabricsuite report` draws both series. Each nightly repeats
    the case twice (--repeat 2); a case measured again to confirm its failure counts once, with
    its last run: 2 runs before and 2 after, too few for Mann-Whitney (it needs 6 and 4), so
    compare judges them against the noise the references recorded (`known_noise_p`;
    Mann-Whitney on real sessions is tests/test_compare.py's, the change point on stored
    sessions tests/test_report.py's). Issue 65 cut two passing nightlies (40 s) and a second
    slow one (35 s, one confirmation round after the partition's 10 s pause: the partition's
    pause now read from the passing nightly's report, `--max-retries` honoured by the quick
    map's suspect test). The catch and false-alarm rates over many trials, at 900 and 800 Mbit,
    are bench/verdicts_emucluster.py's (rates belong in bench/, this test holds the verdicts and
    what they say)."""
    emu, _state = cluster
    results = tmp_path / "results"
    # The link stays slow whatever the pause: 0.2 s instead of the partition's 10 s (0.2, 0.6,
    # 1.8 s for the 3 rounds of the slow session, not 10, 30, 90) spares CI 2 minutes of sleep;
    # -S wins over the partition's extras.
    PAUSE_S = 0.2

    def nightly(tag, *more):
        return emu("exec", str(BIN / "fabricsuite"), "nightly", "--system", "emucluster:nodes",
                   "--tag", tag, "--results", str(results), "--junit", str(tmp_path / "j.xml"),
                   "--", "-n", "NetbenchPingPongBandwidth%distance=other-node", "-p", "openmpi",
                   "--repeat", "2", *QUICK, *more,
                   check=False,
                   extra_env={"MPIEXEC_TIMEOUT": "90"})

    before = nightly("before")
    assert before.returncode == 0, before.stdout[-4000:] + before.stderr[-2000:]
    assert "outcome: PASSED: 2 case(s) within their references" in before.stdout
    # no -S given: each case took the partition's pause (extras.confirm_pause_s), recorded with
    # its run
    (report,) = (results / "reports").glob("run-report-*.json")
    pauses = {c["confirm_pause_s"] for run in json.loads(report.read_text())["runs"]
              for c in run["testcases"] if c["name"].startswith("NetbenchPingPongBandwidth")}
    assert pauses == {10.0}, pauses
    try:
        emu("rate", "800mbit")
        slow = nightly("after", "-S", f"confirm_pause_s={PAUSE_S}")
    finally:
        emu("rate", "1gbit", check=False)
    _assert_regressions_named_with_their_noise_and_shapers(slow.stdout)
    assert slow.returncode == 1, slow.stdout[-4000:]
    named = [ln.strip() for ln in slow.stdout.splitlines()
             if ln.strip().startswith("REGRESSION")]
    assert named and all("NetbenchPingPongBandwidth emucluster:nodes openmpi other-node "
                         "bandwidth_" in ln for ln in named), named
    assert "outcome: REGRESSION" in slow.stdout
    # three confirmation rounds, each after the pause given with -S and its growth (0.2, 0.6,
    # 1.8 s)
    for round_no in range(1, CONFIRM_ROUNDS + 1):
        assert (f"confirmation round {round_no}: measuring the failed cases again after a "
                f"{confirm_pause(round_no, PAUSE_S):g} s pause") in slow.stdout, (
            slow.stdout[-4000:])
    junit = (tmp_path / "j.xml").read_text()
    assert 'failures="2"' in junit and "bandwidth_" in junit

    _compare_and_report_name_the_drop(results, tmp_path)


def _act_drains_the_confirmed_node_once(emu, results: Path, nodes: list[str]) -> None:
    """`fabricsuite act --mode drain` on the session's findings drains node 3 alone, with the
    suite's reason; after an administrator's resume, the same findings are refused (acted on
    once); with Slurm's controller hung, act is one line and exit 2."""
    import os
    import signal

    try:
        acted = emu("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                    "--max-fraction", "0.5", "--results", str(results), check=False)
        assert acted.returncode == 0, acted.stdout + acted.stderr
        state = json.loads(emu("exec", "sinfo", "--json").stdout)["nodes"]
        drained = {n["name"]: n["reason"] for n in state if "DRAIN" in n["state_flags"]}
        assert list(drained) == [nodes[2]], (drained, acted.stdout)
        assert drained[nodes[2]].startswith("fabricsuite: NODE OUTLIER "
                                            "NetbenchPingPongBandwidth "), drained
        # an administrator returns node 3 to service; the same findings acted on again (the
        # cron line `fabricsuite nightly; fabricsuite act` after a nightly that died): refused,
        # the node stays in service
        emu("exec", "scontrol", "update", f"NodeName={nodes[2]}", "State=RESUME")
        again = emu("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                    "--max-fraction", "0.5", "--results", str(results), check=False)
        assert again.returncode == 1 and "was acted on already" in again.stdout, again.stdout
        state = json.loads(emu("exec", "sinfo", "--json").stdout)["nodes"]
        assert not [n for n in state if "DRAIN" in n["state_flags"]], state
        # Slurm's controller hung: one line, exit 2, nothing done
        pid = int((emu.state / "run" / "slurmctld.pid").read_text())
        os.kill(pid, signal.SIGSTOP)
        try:
            hung = emu("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                       "--force", "after repair", "--results", str(results), check=False)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert hung.returncode == 2 and len(hung.stderr.strip().splitlines()) == 1, hung
        assert "slurmctld" in hung.stderr, hung.stderr
    finally:
        for node in nodes:
            emu("exec", "scontrol", "update", f"NodeName={node}", "State=RESUME", check=False)


def test_acceptance_spreads_over_nodes_and_a_slow_new_node_is_re_tested_and_drained_alone(
        cluster, tmp_path):
    """Issues 38 and 52, end to end through Slurm: two acceptance sessions run their pair on
    nodes 1-2, then 3-4 (the rotation). Against references taken on nodes 1-2 (the shipped file,
    its _statistics naming them), a nightly forced onto nodes 3-4 (-J--nodelist) while node 3's
    link runs at half the rate fails there, passes its confirmation on nodes 1-2 (the session's
    own node choice dropped), and is a NODE OUTLIER naming nodes 3 and 4, which the pair cannot
    tell apart: exit 1, JUnit failure type node-outlier. `--retest-suspects` then re-tests each
    against a known node in its mate's place: node 3 with node 2 fails (confirmed), node 4 with
    node 1 passes (cleared); `fabricsuite act --mode drain` drains node 3 alone, with the
    suite's reason, and acts on those findings once. bench/node_outliers_emucluster.py (--act)
    counts the same as trials. (One test since issue 65: the re-test's own test ran the same
    failing nightly again.)"""
    from fabricsuite.data.cases import node_names

    emu, _state = cluster
    nodes = [f"{PREFIX}{i}" for i in range(1, 5)]
    check = ["-n", "NetbenchPingPongBandwidth%distance=other-node", "-p", "openmpi"]

    def nightly(results, mode, *more, own=(), extra_env=None):
        return emu("exec", str(BIN / "fabricsuite"), "nightly", "--system", "emucluster:nodes",
                   "--mode", mode, "--tag", mode, "--results", str(results), "--junit",
                   str(tmp_path / f"{mode}.xml"), *own, "--", *check, *QUICK, "-S",
                   "confirm_pause_s=1", *more, check=False,
                   extra_env={"MPIEXEC_TIMEOUT": "90", **(extra_env or {})})

    accepted = tmp_path / "acceptance"
    for session, expected in enumerate((nodes[:2], nodes[2:])):
        proc = nightly(accepted, "acceptance", "--repeat", "1", "-S", "require_reference=false")
        assert f"acceptance session {session + 1} of tag acceptance" in proc.stdout, (
            proc.stdout[-3000:])
        report = max((accepted / "reports").glob("run-report-*.json"),
                     key=lambda p: p.stat().st_mtime)
        ran = [c for run in json.loads(report.read_text())["runs"] for c in run["testcases"]
               if c["name"].startswith("NetbenchPingPongBandwidth")]
        assert ran and all(list(node_names(c["job_nodelist"])) == expected for c in ran), (
            [c["job_nodelist"] for c in ran], proc.stdout[-3000:])

    refs = tmp_path / "refs"
    refs.mkdir()
    data = yaml.safe_load((REPO_ROOT / "reference" / "emucluster.yaml").read_text())
    for key, entry in data["_statistics"].items():
        if key.startswith("NetbenchPingPongBandwidth emucluster:nodes openmpi "):
            entry["nodes"] = nodes[:2]
    (refs / "emucluster.yaml").write_text(yaml.safe_dump(data))
    try:
        emu("rate", "500mbit", "3")
        # A round whose ranks waited for their CPUs is interference by design, never a node
        # outlier (the CI host of 2026-12-01: 6 % and 14 % waits beside the shaped link's TCP
        # work, in the first run and in the confirmation): such a session says so, names no
        # node to act on, and the test takes one more.
        for attempt in range(2):
            results = tmp_path / f"nightly{attempt}"
            proc = nightly(results, "nightly", f"-J--nodelist={','.join(nodes[2:])}",
                           own=("--retest-suspects",),
                           extra_env={"RFM_REFERENCE_PREFIX": str(refs)})
            if "outcome: NODE OUTLIER" in proc.stdout:
                break
            assert "interference, not the fabric" in proc.stdout, proc.stdout[-5000:]
            for path in (results / "findings").glob("*.json"):
                assert "node-outlier" not in path.read_text(), proc.stdout[-5000:]
            print(f"the nightly was disturbed, measuring again:\n{proc.stdout[-3000:]}")
    finally:
        emu("rate", "1gbit", check=False)
    said = proc.stdout + proc.stderr
    assert proc.returncode == 1, said[-5000:]
    assert f"confirming on {nodes[0]}, {nodes[1]}" in said, said[-5000:]
    (line,) = [ln.strip() for ln in proc.stdout.splitlines()
               if ln.strip().startswith("NODE OUTLIER ")]
    assert f": {nodes[2]}, {nodes[3]}: first run bandwidth_" in line, line
    assert f"within the references on {nodes[0]}, {nodes[1]}" in line, line
    assert 'type="node-outlier"' in (tmp_path / "nightly.xml").read_text()
    # each suspect against the known node in its mate's place (node 3 with node 2, node 4 with
    # node 1: on the emulation also a pair that does not share a core)
    assert f"re-testing suspect {nodes[2]} against {nodes[1]}" in said, said[-5000:]
    assert f"suspect {nodes[2]} re-tested against {nodes[1]}: confirmed" in said, said[-5000:]
    assert f"suspect {nodes[3]} re-tested against {nodes[0]}: cleared" in said, said[-5000:]
    # the re-tests' own outcome, after the session's
    assert (f"outcome after the re-test of suspects: 1 confirmed ({nodes[2]}); 1 cleared "
            f"({nodes[3]})") in said, said[-5000:]
    (path,) = (results / "findings").glob("*.json")
    doc = json.loads(path.read_text())
    assert "pending" not in doc  # the nightly's own findings replaced its pending file
    assert [(f["kind"], f["confidence"], f["nodes"]) for f in doc["findings"]] == [
        ("node-outlier", "confirmed", nodes[2])], doc
    assert [r["result"] for r in doc["retests"]] == ["confirmed", "cleared"], doc
    _act_drains_the_confirmed_node_once(emu, results, nodes)


def test_a_node_link_below_the_declared_rate_is_named_before_any_benchmark(cluster, tmp_path):
    """Issue 50, end to end through Slurm: FabricLinks reads every node's links (one srun task
    per node: read-counters, source links) against a contract of 1 Gbit per node's eth0
    (FABRICSUITE_EMU_DECLARED_GBPS); healthy, it passes and lists the four links; with node
    2's link shaped to half the rate, it fails naming that node and port, with what it runs at
    and the promise, and the session's verdict is LINK DEGRADED (exit 1). No MPI program runs:
    seconds. bench/link_findings.py counts it over 10 trials each way."""
    from fabricsuite.commands import session

    emu, _state = cluster
    declared = {"FABRICSUITE_EMU_DECLARED_GBPS": "1"}

    def read_links(results):
        proc = run_reframe(emu, results, "-c", "checks/links.py", "-n", "FabricLinks",
                           "--max-retries=0", extra_env=declared)
        report = json.loads(max((results / "reports").glob("run-report-*.json"),
                                key=lambda p: p.stat().st_mtime).read_text())
        # read in each environment, the same links: one case judged here
        case = next(c for c in report["runs"][-1]["testcases"] if c["environ"] == "openmpi")
        return proc, report, case

    proc, report, case = read_links(tmp_path / "healthy")
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:]
    assert case["links"] == ", ".join(f"{PREFIX}{i} net/eth0 1 Gb/s" for i in range(1, 5))
    assert session.classify(report)[0] == session.WITHIN, session.classify(report)
    try:
        emu("rate", "500mbit", "2")
        proc, report, case = read_links(tmp_path / "slow")
    finally:
        emu("rate", "1gbit", check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert case["link_findings"] == (f"LINK DEGRADED {PREFIX}2 net/eth0: 0.5 Gb/s, declared "
                                     f"1 Gb/s"), case
    code, why = session.classify(report)
    assert code == session.REGRESSED and why.startswith("LINK DEGRADED: 1 link finding(s)"), why


def test_a_latency_above_the_promised_one_fails_naming_it(cluster, tmp_path):
    """Issue 50, the vendor's latency: a partition that promises a latency at 8 B between two
    nodes (extras.fabric.promise.latency_8B_us, FABRICSUITE_EMU_PROMISED_LATENCY_US) judges
    NetbenchPingPong's median latency across nodes as a multiple of it, at most 1, on a fabric
    without references of its own. Promised 1 us, which no TCP link meets: the case fails on
    that figure alone, the outcome names the latency and the promise; promised 100 ms, the
    same case passes. The multiple is the run's own median over the promise."""
    from fabricsuite.commands import session
    from fabricsuite.data import links

    emu, _state = cluster
    refs = tmp_path / "refs"
    refs.mkdir()

    def pingpong(results, promised_us):
        proc = run_reframe(emu, results, "-c", "checks/pt2pt.py", "-n",
                           "NetbenchPingPong%distance=other-node", "-p", "openmpi", *QUICK,
                           "-S", "require_reference=false", "--max-retries=0",
                           extra_env={"FABRICSUITE_EMU_DECLARED_GBPS": "1",
                                      "FABRICSUITE_EMU_PROMISED_LATENCY_US": promised_us,
                                      "RFM_REFERENCE_PREFIX": str(refs)})
        report = json.loads(max((results / "reports").glob("run-report-*.json"),
                                key=lambda p: p.stat().st_mtime).read_text())
        (case,) = [c for c in report["runs"][-1]["testcases"] if not c.get("fixture")]
        return proc, report, case

    proc, report, case = pingpong(tmp_path / "missed", "1")
    assert proc.returncode != 0 and case["result"] == "fail", proc.stdout[-3000:]
    perf = {k.rsplit(":", 1)[-1]: v for k, v in case["perfvalues"].items()}
    multiple, median = perf["latency_8B_promise_multiple"], perf["latency_8B_median_us"]
    assert multiple[0] == pytest.approx(median[0]) and multiple[0] > 1, perf
    assert multiple[4] == links.PROMISE_MULTIPLE and multiple[5] == "fail", multiple
    assert links.failed_only_its_promise(case), case["perfvalues"]
    assert case["promised_latency_us"] == 1.0
    lines = session.summary_lines(report, [])
    assert any(ln.endswith(" promised at most 1 us): ABOVE") and "latency_8B_promise_multiple"
               in ln for ln in lines), "\n".join(lines)

    proc, report, case = pingpong(tmp_path / "kept", "100000")
    assert proc.returncode == 0 and case["result"] == "pass", proc.stdout[-3000:]
    perf = {k.rsplit(":", 1)[-1]: v for k, v in case["perfvalues"].items()}
    assert 0 < perf["latency_8B_promise_multiple"][0] < 0.01, perf


def test_acceptance_of_a_fabric_below_its_promise_fails_and_needs_a_waiver(cluster, tmp_path):
    """Issue 50, end to end through Slurm: every link shaped to 500 Mbit in a partition that
    declares 1 Gbit (FABRICSUITE_EMU_DECLARED_GBPS), a new fabric without references yet. Its
    acceptance session fails naming the line fraction and the promise (the bandwidth at 1 MiB is
    half the line rate, the promise 0.7); `fabricsuite baseline --acceptance` refuses to make
    it its own reference; with --waiver it writes the references, and the file records why."""
    emu, _state = cluster
    results, refs = tmp_path / "results", tmp_path / "refs"
    refs.mkdir()
    env = {"FABRICSUITE_EMU_DECLARED_GBPS": "1", "RFM_REFERENCE_PREFIX": str(refs),
           "MPIEXEC_TIMEOUT": "90"}
    try:
        emu("rate", "500mbit")
        proc = emu("exec", str(BIN / "fabricsuite"), "nightly", "--system", "emucluster:nodes",
                   "--mode", "acceptance", "--tag", "acceptance", "--results", str(results),
                   "--junit", str(tmp_path / "acceptance.xml"), "--", "-n",
                   "NetbenchPingPongBandwidth%distance=other-node", "-p", "openmpi", *QUICK,
                   "-S", "require_reference=false", "--repeat", "1", "--max-retries=1", "-S",
                   "confirm_pause_s=1", check=False, extra_env=env)
    finally:
        emu("rate", "1gbit", check=False)
    assert proc.returncode == 1, proc.stdout[-4000:] + proc.stderr[-2000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if "bandwidth_1MiB_line_fraction" in ln
               and "promised" in ln]
    fraction = float(re.search(r"bandwidth_1MiB_line_fraction (\d\.\d+) of 1 Gb/s", line)[1])
    assert 0.4 < fraction < 0.6 and "promised 0.70: BELOW" in line, line

    def baseline(*more):
        return subprocess.run(
            [str(BIN / "fabricsuite"), "baseline", "--system", "emucluster", "--results",
             str(results), "--acceptance", "--last", "1", "--min-runs", "1", "--min-sessions",
             "1", "--output", str(refs / "emucluster.yaml"), *more],
            capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)

    refused = baseline()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (last,) = refused.stderr.strip().splitlines()[-1:]
    assert "--acceptance refused, nothing written" in last and "promise" in last, last
    # the case's own reading of its nodes' links found them below the contract too
    assert ("LINK DEGRADED" in last or "bandwidth_1MiB_line_fraction" in last) and \
        "--waiver REASON" in last, last
    assert not (refs / "emucluster.yaml").exists()
    waived = baseline("--waiver", "test: the emulated links at half their rate")
    assert waived.returncode == 0, waived.stdout + waived.stderr
    written = yaml.safe_load((refs / "emucluster.yaml").read_text())
    (waiver,) = written["_waivers"]
    assert waiver["reason"] == "test: the emulated links at half their rate"
    assert any("bandwidth_1MiB_line_fraction" in w for w in waiver["waived"]), waiver
    scope = written["NetbenchPingPongBandwidth"]["emucluster:nodes"]["openmpi"]["other-node"]
    assert "bandwidth_1MiB_MBps" in scope and "bandwidth_1MiB_line_fraction" not in scope

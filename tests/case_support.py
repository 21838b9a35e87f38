"""What the tests of the case model and of the session's findings share: the real run reports
of tests/data/cases (README.md there) and their variants on named nodes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from fabricsuite.data import cases

DATA = Path(__file__).parent / "data" / "cases"


def report(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def on_nodes(data: dict, first_nodes: list[str], last_nodes: list[str], passed: bool) -> dict:
    """The real bandwidth case of judged-own.json as if its first run had met node(s)
    `first_nodes` and its last (the confirmation) `last_nodes`, passing there or not."""
    data = copy.deepcopy(data)
    runs = data["runs"]
    if passed:
        # ReFrame confirms until the first pass: the case's rounds are its first run and the
        # confirmation that passed
        for run in runs[1:-1]:
            run["testcases"] = [c for c in run["testcases"]
                                if not c["name"].startswith("NetbenchPingPongBandwidth")]
    for index, run in enumerate(runs):
        for case in run["testcases"]:
            if case["name"].startswith("NetbenchPingPongBandwidth"):
                case["job_nodelist"] = first_nodes if index == 0 else last_nodes
                if passed and index == len(runs) - 1:
                    case["result"], case["fail_phase"], case["fail_reason"] = "pass", None, None
                    for perf in case["perfvalues"].values():
                        perf[5] = "pass"
    return data


def sessions_of_every_verdict() -> list[str]:
    """The real stored sessions of tests/data/cases, and three variants of the real judged-own
    session (session_of)."""
    return [*sorted(p.stem for p in DATA.glob("*.json")), "node-outlier", "transient",
            "link-degraded"]


def session_of(name: str) -> dict:
    """A stored session by name, or a variant of judged-own.json: its bandwidth case failed
    first on a node its references never saw and passed on a known one (`node-outlier`); its
    bandwidth case measured in two rounds, each outside on another variable (`transient`:
    the rounds disagree); its ping-pong's run found a link below the partition's promise
    (`link-degraded`, as the check records it)."""
    if name == "node-outlier":
        return on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)
    data = report({"transient": "judged-own", "link-degraded": "judged-own"}.get(name, name))
    if name == "transient":
        # the first round and the last: the peak outside in the first only, the 1 MiB figure
        # (outside in the last round alone, as recorded) in the last only
        data["runs"] = [data["runs"][0], data["runs"][-1]]
        for case in data["runs"][-1]["testcases"]:
            if case["name"].startswith("NetbenchPingPongBandwidth"):
                for key, perf in case["perfvalues"].items():
                    if key.endswith("bandwidth_peak_MBps"):
                        perf[5] = "pass"
    if name == "link-degraded":
        for case in cases.final_cases(data):
            if case["name"].startswith("NetbenchPingPong ") and case["result"] == "pass":
                case["link_findings"] = "LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s"
    return data

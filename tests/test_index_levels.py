"""The index levels of a key (fabricsuite.base.metrics.INDEX_FIELDS): the memory level, at
"host" for every figure today, left out of keys so stored files keep their names, and written
by `fabricsuite baseline` where a check has device figures beside host ones."""

import json

import yaml
from test_baseline import LAT, LAT_MIN, baseline_of_three, pingpong, real, set_values


def test_host_memory_is_left_out_of_keys_so_stored_files_keep_their_names():
    from fabricsuite.base.metrics import case_scope
    case = pingpong(real())
    before = case_scope(case)
    assert before[3] == (("distance", "same-l3"),)
    assert case_scope({**case, "memory": "host"}) == before
    assert case_scope({**case, "memory": "device"})[3] == (("distance", "same-l3"),
                                                           ("memory", "device"))


def test_a_check_with_device_figures_keeps_its_host_figures_under_host(tmp_path, capsys):
    def with_device_twin(report):
        cases = report["runs"][0]["testcases"]
        host = pingpong(report)
        device = json.loads(json.dumps(host))
        device["memory"] = "device"
        set_values(device, **{LAT: 7.0, LAT_MIN: 6.5})
        cases.append(device)

    out = baseline_of_three(tmp_path, capsys, with_device_twin)
    entry = yaml.safe_load(out.read_text())["NetbenchPingPong"]
    assert entry["$index"] == ["$partition", "$environ", "distance", "memory"]
    host = entry["local:default"]["openmpi"]["same-l3"]["host"][LAT]
    device = entry["local:default"]["openmpi"]["same-l3"]["device"][LAT]
    assert host[0] == 1 and device[0] == 7.0
    # the host figures alone, as every session before device memory: no memory level
    plain = baseline_of_three(tmp_path / "plain", capsys, None)
    assert yaml.safe_load(plain.read_text())["NetbenchPingPong"]["$index"] == [
        "$partition", "$environ", "distance"]

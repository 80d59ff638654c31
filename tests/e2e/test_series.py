"""Who is slow: --by pid|cgroup gives each process's (cgroup's) own histogram
and -c traces only the tasks of a cgroup, against each target-app process's
own ground truth, in both aggregation modes; --max-series folds the rest
into `other` without losing a call."""

import time

import pytest

from conftest import cgroup_v2_mount, parse_json_records, run_processes, totals

pytestmark = pytest.mark.bpf
MODES = ["events", "kernel"]
CALLS = 150


@pytest.mark.parametrize("mode", MODES)
def test_by_pid_and_by_cgroup_count_each_process_exactly(procs, tool, private_app, cgroups,
                                                         mode):
    a, b = cgroups("a"), cgroups("b")
    records, truths = run_processes(procs, tool, private_app, [a, a, b], ["--by", "pid"], mode)
    by_pid = {r["pid"]: r for r in totals(records)}
    assert set(by_pid) == set(truths), (by_pid.keys(), truths.keys())
    for pid, truth in truths.items():
        assert by_pid[pid]["count"] == truth["calls"] == CALLS, (pid, by_pid[pid])
        assert by_pid[pid]["comm"] == "target-app"
        assert by_pid[pid]["mode"] == mode

    records, truths = run_processes(procs, tool, private_app, [a, a, b], ["--by", "cgroup"], mode)
    by_cgroup = {r["cgroup"]: r["count"] for r in totals(records)}
    mount = cgroup_v2_mount()
    assert by_cgroup == {"/" + str(a.relative_to(mount)): 2 * CALLS,
                         "/" + str(b.relative_to(mount)): CALLS}, by_cgroup


@pytest.mark.parametrize("mode", MODES)
def test_cgroup_filter_counts_only_its_processes(procs, tool, private_app, cgroups, mode):
    a, b = cgroups("a"), cgroups("b")
    records, truths = run_processes(procs, tool, private_app, [a, b, b], ["-c", str(a)], mode)
    (total,) = totals(records)
    pids = list(truths)
    assert total["count"] == truths[pids[0]]["calls"] == CALLS, total


@pytest.mark.parametrize("mode", MODES)
def test_max_series_folds_the_rest_into_other(procs, tool, private_app, mode):
    """30 short-lived processes, room for 10 series that never end (an hour's
    --series-expiry): 10 series and `other`; every call is counted once.
    (test_series_expiry.py: series that end leave room for the next.)"""
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-i", "0.3", "--by", "pid",
                                     "--max-series", "10", "--series-expiry", "3600s",
                                     f"{private_app}:slow_op"])
    calls = 20
    pids = []
    for _ in range(30):
        work = procs.start_workload(private_app, ["--calls", str(calls), "--threads", "1"])
        work.start()
        assert work.finish().function("slow_op")["calls"] == calls
        pids.append(work.pid)
    # The tool keeps running: two more intervals report the last calls.
    time.sleep(1.0)
    traced.stop()
    records = parse_json_records(traced.text("stdout"))
    intervals = [r for r in records if r["type"] == "interval"]
    # Every call counted once across the series and `other`.
    assert sum(r["count"] for r in intervals) == 30 * calls
    series = {r["pid"] for r in intervals if "pid" in r and r.get("series") != "other"}
    assert len(series) == 10, series
    other = [r for r in intervals if r.get("series") == "other"]
    assert sum(r["count"] for r in other) == 20 * calls
    assert max(r.get("series_folded", 0) for r in records) == 20

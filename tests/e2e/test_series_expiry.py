"""Series end: a series whose processes are gone and that had no call for
--series-expiry is reported once more (marked "series_ended") and dropped,
from the kernel's map and from every exporter, so --max-series bounds the
series alive at once, not every container or process ever seen.

- More short-lived podman containers than --max-series, one after another,
  followed by the agent (--follow, series by cgroup): each container gets a
  series of its own, its calls counted exactly against its program's own
  truth, none folded into `other`; a real Prometheus scraped each one's last
  count, then the series left /metrics and went stale there; the
  self-metrics count every series that ended. In both aggregation modes (in
  kernel mode a series left in the kernel's map would fill it, fold calls
  into `other`, or count a container twice).
- --by pid: more processes than --max-series, one after another: each ends
  once its process exited, so each has its own series, exactly counted; also
  across the automatic switch (events, kernel, events again)."""

import json
import os
import re
import signal
import time

import pytest

from conftest import build_dir, free_port, parse_json_records, wait_until
from containers import RUN_PREFIX, container_images, containers  # noqa: F401 (fixtures)
from test_follow import READY, start_agent, truth_calls, wait_for_attached
from test_prometheus import PrometheusServer, http_get

pytestmark = pytest.mark.bpf
MODES = ["events", "kernel"]
CONTAINERS = 6
MAX_SERIES = 2
CALLS = 40
# A path of this run's own: the agent follows every program of that path on
# the host, and other runs' containers must not take the room.
PROGRAM = f"/app/{RUN_PREFIX}/target-app"


def records_of(agent):
    return parse_json_records(agent.text("stdout"))


def ended_series(agent):
    """container_id of every series the agent reported as ended so far."""
    return {r.get("container_id") for r in records_of(agent) if r.get("series_ended")}


def series_summary(agent) -> str:
    """The agent's series records that say something (calls, or an end)."""
    return "\n".join(
        f"{r['time']} {r.get('container_id', r.get('series', '?'))[:12]} {r['count']} calls"
        f"{' ended' if r.get('series_ended') else ''}"
        for r in records_of(agent) if "symbol" in r and (r["count"] or r.get("series_ended")))


def exposed(endpoint, container_id) -> bool:
    _, text = http_get(f"http://{endpoint}/metrics")
    return f'container_id="{container_id}"' in text


def self_metric(endpoint, name) -> float:
    _, text = http_get(f"http://{endpoint}/metrics")
    match = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert match, f"no {name} in\n{text[:2000]}"
    return float(match.group(1))


@pytest.mark.parametrize("mode", MODES)
def test_short_lived_containers_each_get_their_own_series(
        procs, tool, target_app, tmp_path, container_images, containers, mode):
    image = container_images.build("expiry-app", "v1", {PROGRAM: target_app})
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o777)
    endpoint = f"127.0.0.1:{free_port()}"
    prometheus = PrometheusServer(procs, tmp_path, endpoint,
                                  job="    scrape_interval: 500ms\n    scrape_timeout: 500ms\n")
    agent = start_agent(procs, tool, [
        "--follow", "--json", "-i", "0.5", "--mode", mode, "--max-series", str(MAX_SERIES),
        "--series-expiry", "1.5s", "--prometheus", endpoint, f"{PROGRAM}:slow_op"])
    # Prometheus scrapes the agent before the first container starts.
    assert wait_until(lambda: [v for _, v in prometheus.query("up")] == [1.0], 30.0,
                      interval=0.25), prometheus.api("targets")
    truths = {}
    for index in range(CONTAINERS):
        # 1 s of calls: the agent reads the kernel's series while the
        # container (and so its cgroup's name) is still there.
        box = containers.run(image, [PROGRAM, "--wait-signal", "--calls", str(CALLS),
                                     "--rate", "40", "--truth", f"/out/{index}.json"],
                             volumes={out: "/out"})
        box.wait_for_log(READY)
        if index == 0:
            wait_for_attached(agent, 1)
        box.signal(signal.SIGUSR1)
        assert box.wait(120) == 0, box.logs()
        truths[box.id] = truth_calls(out / f"{index}.json")["calls"]
        # Its cgroup gone and 1.5 s without a call: its last report...
        assert wait_until(lambda: box.id in ended_series(agent), 20.0, interval=0.25), (
            f"container {index} ({box.id[:12]})'s series never ended\n"
            f"{series_summary(agent)}\n{agent.describe()}")
        # ...and no longer on the endpoint once the next report replaced it.
        assert wait_until(lambda: not exposed(endpoint, box.id), 5.0, interval=0.25), (
            f"container {index}'s series is still exposed")
    expired = self_metric(endpoint, "funclatency_series_expired_total")

    # Prometheus scraped each container's last count, and holds no current
    # value of any (stale since they left the endpoint).
    def last_counts():
        return {labels.get("container_id"): value for labels, value in prometheus.query(
            'last_over_time(ebpf_function_latency_ms_count{symbol="slow_op"}[5m])')}

    expected = {container: float(calls) for container, calls in truths.items()}
    assert wait_until(lambda: last_counts() == expected, 15.0, interval=0.5), (
        f"Prometheus' last counts {last_counts()}, the containers made {expected}")
    # (Stale once a scrape no longer finds them.)
    assert wait_until(
        lambda: prometheus.query('ebpf_function_latency_ms_count{symbol="slow_op"}') == [],
        10.0, interval=0.5), (
        "series of containers that are gone are still current in Prometheus",
        prometheus.query('ebpf_function_latency_ms_count{symbol="slow_op"}'))
    assert agent.stop() == 0, agent.describe()

    records = records_of(agent)
    functions = [r for r in records if r["type"] == "interval" and "symbol" in r]
    assert not [r for r in functions if r.get("series") == "other"], (
        "calls folded into `other`", [r for r in functions if r.get("series") == "other"])
    counts = {}
    for record in functions:
        counts[record.get("container_id")] = counts.get(record.get("container_id"), 0) + \
            record["count"]
    assert counts == truths, (counts, truths)
    assert all(t == CALLS for t in truths.values()), truths
    assert all(r["lost"] == 0 for r in functions), [r for r in functions if r["lost"]]
    # One last report per container, and none after it.
    for container in truths:
        own = [r for r in functions if r.get("container_id") == container]
        assert [r.get("series_ended", False) for r in own][-1] is True, own
        assert sum(1 for r in own if r.get("series_ended")) == 1, own
        assert all(r["mode"] == mode for r in own), own
    agents = [r for r in records if r["type"] == "agent"]
    assert agents[-1]["series_folded"] == 0, agents[-1]
    assert agents[-1]["series_expired"] >= CONTAINERS, agents[-1]
    assert expired >= CONTAINERS, expired


@pytest.mark.parametrize("mode", MODES)
def test_series_of_exited_processes_leave_room_for_the_next(procs, tool, private_app, mode):
    """Room for 2 series, 6 processes one after another: each series ends
    (reported once more) after its process exited, so every process gets a
    series of its own, exactly counted; none folded."""
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-i", "0.3", "--by", "pid",
                                     "--max-series", "2", f"{private_app}:slow_op"])
    calls = 20
    pids = []

    def ended():
        return {r.get("pid") for r in parse_json_records(traced.text("stdout"))
                if r.get("series_ended")}

    for _ in range(6):
        work = procs.start_workload(private_app, ["--calls", str(calls), "--threads", "1"])
        work.start()
        assert work.finish().function("slow_op")["calls"] == calls
        pids.append(work.pid)
        assert wait_until(lambda: work.pid in ended(), 10.0, interval=0.2), traced.describe()
    time.sleep(0.5)
    traced.stop()
    records = parse_json_records(traced.text("stdout"))
    intervals = [r for r in records if r["type"] == "interval"]
    assert not [r for r in intervals if r.get("series") == "other"], intervals
    counts = {}
    for record in intervals:
        counts[record["pid"]] = counts.get(record["pid"], 0) + record["count"]
    assert counts == {pid: calls for pid in pids}, counts
    for pid in pids:
        own = [r for r in intervals if r["pid"] == pid]
        assert own[-1].get("series_ended") is True, own
        assert sum(1 for r in own if r.get("series_ended")) == 1, own
    # An ended series is in no later report, the final totals included.
    assert not [r for r in records if r["type"] == "total" and r.get("pid") in pids]


def test_series_that_switched_modes_end_exactly(procs, tool, tmp_path):
    """The automatic switch: each process's calls go calm, hot (kernel mode),
    calm (events mode) again; room for 1 series, 2 processes one after the
    other: the first series ends (its kernel entries taken out), the second
    gets a series of its own, each counted exactly across both modes."""
    phased = build_dir() / "tests" / "programs" / "phased"
    traced = procs.start_tool(tool, ["--json", "-v", "--mode", "auto", "--auto-threshold", "3000",
                                     "-i", "0.5", "--by", "pid", "--max-series", "1",
                                     f"{phased}:phased_op"])
    calls = {}
    for index in range(2):
        truth_path = tmp_path / f"truth-{index}.json"
        work = procs.spawn([phased, "--truth", truth_path, "300:0.5", "20000:1.5", "300:3"])
        work.wait_for_line("stdout", r"^ready pid=\d+", 10)
        os.kill(work.pid, signal.SIGUSR1)
        assert work.wait(60) == 0, work.describe()
        calls[work.pid] = json.loads(truth_path.read_text())["calls"]

        def ended():
            return {r.get("pid") for r in parse_json_records(traced.text("stdout"))
                    if r.get("series_ended")}

        assert wait_until(lambda: work.pid in ended(), 10.0, interval=0.2), traced.describe()
    assert traced.stop() == 0, traced.describe()
    records = parse_json_records(traced.text("stdout"))
    intervals = [r for r in records if r["type"] == "interval"]
    assert not [r for r in intervals if r.get("series") == "other"], traced.describe()
    counts, modes = {}, {}
    for record in intervals:
        counts[record["pid"]] = counts.get(record["pid"], 0) + record["count"]
        if record["count"]:
            modes.setdefault(record["pid"], set()).add(record["mode"])
    assert counts == calls, (counts, calls)
    assert all("kernel" in m and "events" in m for m in modes.values()), modes
    assert all(r["lost"] == 0 for r in intervals)

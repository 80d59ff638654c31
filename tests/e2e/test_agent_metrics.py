"""The agent's self-metrics through a real Prometheus: `funclatency --follow
--prometheus ... --json` follows a private copy of target-app into every
process that runs it, Debian's `prometheus` scrapes /metrics, and what its
HTTP API answers for funclatency_* agrees with the {"type":"agent"} records
the same run prints (each report goes to both sinks). A process in a cgroup
named like a podman container is a series labelled container_runtime="podman";
a new program at the followed path without slow_op is an attach failure
(no_function), counted the same on both sides."""

import json
import os
import shutil
import time
from datetime import datetime

import pytest

from conftest import TOOL_ATTACH_TIMEOUT, free_port, thread_named, wait_until
from test_otlp import attributes, metrics_of, receiver_program, start_receiver  # noqa: F401
from test_prometheus import PrometheusServer

pytestmark = pytest.mark.bpf
CALLS = 600
RATE = 200  # calls per second: each process works about 3 s, over several scrapes
SCRAPE_TIMEOUT = 20.0
SCRAPE_LAG = 4.0  # seconds: scrape interval 1 s, exporters' live reports every 1 s, slack


def agent_records(traced):
    """The {"type":"agent"} records printed so far, oldest first."""
    records = []
    for line in traced.lines("stdout"):
        if line.startswith("{"):
            record = json.loads(line)
            if record["type"] == "agent":
                records.append(record)
    return records


def latest_agent(traced):
    records = agent_records(traced)
    assert records, f"no agent record yet\n{traced.describe()}"
    return records[-1]


def self_metric(prometheus, expr):
    """The one sample of a funclatency_* query, or None before the first scrape has it."""
    samples = prometheus.query(expr)
    assert len(samples) <= 1, (expr, samples)
    return samples[0][1] if samples else None


def record_time(record):
    return datetime.fromisoformat(record["time"].replace("Z", "+00:00")).timestamp()


def scraped_as_printed(prometheus, traced, expr, field):
    """Prometheus' value of `expr` (waiting for it), checked against the agent's
    records around the query and returned. The exporters also get the running
    totals between the printed reports, so a scraped value need not be one the
    agent printed: it lies between what the agent printed SCRAPE_LAG seconds
    before the query (scrapes and live reports are at most that old) and what
    it prints after (the values only grow). `field` reads it from a record."""
    assert wait_until(lambda: self_metric(prometheus, expr) is not None, SCRAPE_TIMEOUT,
                      interval=0.25), (
        f"Prometheus has no {expr}\ntargets: {prometheus.api('targets')}\n{traced.describe()}")
    asked = time.time()
    value = self_metric(prometheus, expr)
    printed = len(agent_records(traced))
    assert wait_until(lambda: len(agent_records(traced)) > printed, SCRAPE_TIMEOUT), (
        traced.describe())
    records = agent_records(traced)
    before = [field(r) for r in records if record_time(r) <= asked - SCRAPE_LAG]
    low, high = (before[-1] if before else 0), field(records[-1])
    assert low <= value <= high, (
        f"{expr} = {value}; the agent printed {low} {SCRAPE_LAG} s before and {high} after: "
        f"{[field(r) for r in records]}")
    return value


def reloaded(record):
    return 1.0 if record["config_last_reload_successful"] else 0.0


def failures(reason):
    return lambda record: record["attach_failures"][reason]


def settled(prometheus, traced, expr, field, expected):
    """Waits until both the agent's latest record and Prometheus say `expected`."""
    assert wait_until(lambda: field(latest_agent(traced)) == expected and
                      self_metric(prometheus, expr) == expected, SCRAPE_TIMEOUT, interval=0.25), (
        f"{expr}: Prometheus {self_metric(prometheus, expr)}, agent "
        f"{field(latest_agent(traced))}, want {expected}\n{traced.describe()}")


def test_self_metrics_match_the_agent_records(procs, tool, target_app, tmp_path, cgroups):
    app = tmp_path / "target-app"
    shutil.copy2(target_app, app)
    endpoint = f"127.0.0.1:{free_port()}"
    prometheus = PrometheusServer(procs, tmp_path, endpoint)
    traced = procs.spawn([tool, "--follow", "--prometheus", endpoint, "--json", "-i", "1",
                          f"{app}:slow_op"])
    traced.wait_for_line("stderr", r"^Following ", TOOL_ATTACH_TIMEOUT)

    # Nothing runs the program yet: no probes, nothing failed.
    first_exec = scraped_as_printed(prometheus, traced, "funclatency_exec_events_total",
                                    lambda r: r["processes_seen"])
    assert self_metric(prometheus, "funclatency_attached_functions") == 0

    # Three processes exec'd after the start; one in a podman container's cgroup.
    container_id = os.urandom(32).hex()
    container = cgroups("agent", "machine.slice", f"libpod-{container_id}.scope")
    works = [procs.start_workload(app, ["--calls", str(CALLS), "--threads", "1",
                                        "--rate", str(RATE)]) for _ in range(3)]
    (container / "cgroup.procs").write_text(str(works[0].pid))
    settled(prometheus, traced, "funclatency_attached_functions",
            lambda r: r["functions_attached"], 1)
    for work in works:
        work.start()

    # The probes' CPU time grows while the processes work, the same on both sides.
    cpu_expr = "funclatency_probe_cpu_seconds_total"
    assert wait_until(lambda: (self_metric(prometheus, cpu_expr) or 0) > 0, SCRAPE_TIMEOUT,
                      interval=0.25), traced.describe()
    cpu_early = scraped_as_printed(prometheus, traced, cpu_expr, lambda r: r["probe_cpu_seconds"])
    truths = [work.finish(timeout=60).function("slow_op") for work in works]
    assert [t["returned"] for t in truths] == [CALLS] * 3
    assert wait_until(lambda: self_metric(prometheus, "sum(ebpf_function_latency_ms_count)") ==
                      3 * CALLS, SCRAPE_TIMEOUT, interval=0.25), traced.describe()
    # No calls any more: both sides come to the same value, exactly.
    assert wait_until(lambda: self_metric(prometheus, cpu_expr) ==
                      latest_agent(traced)["probe_cpu_seconds"], SCRAPE_TIMEOUT,
                      interval=0.25), (self_metric(prometheus, cpu_expr), latest_agent(traced))
    cpu_late = scraped_as_printed(prometheus, traced, cpu_expr, lambda r: r["probe_cpu_seconds"])
    assert 0 < cpu_early < cpu_late, (cpu_early, cpu_late)

    # One program file, one function; every process attached.
    assert scraped_as_printed(prometheus, traced, "funclatency_attached_functions",
                              lambda r: r["functions_attached"]) == 1
    assert scraped_as_printed(prometheus, traced, "funclatency_attached_files",
                              lambda r: r["files_attached"]) == 1
    for reason in ("no_function", "no_room", "kernel_refused"):
        assert scraped_as_printed(
            prometheus, traced, f'funclatency_attach_failures_total{{reason="{reason}"}}',
            failures(reason)) == 0, reason
    exec_events = scraped_as_printed(prometheus, traced, "funclatency_exec_events_total",
                                     lambda r: r["processes_seen"])
    assert exec_events >= first_exec + len(works), (first_exec, exec_events)
    assert scraped_as_printed(prometheus, traced, "funclatency_config_last_reload_successful",
                              reloaded) == 1
    assert scraped_as_printed(prometheus, traced, "funclatency_config_reload_failures_total",
                              lambda r: r["config_reload_failures"]) == 0
    assert scraped_as_printed(prometheus, traced, "funclatency_ringbuf_dropped_total",
                              lambda r: r["ringbuf_dropped"]) == 0
    assert scraped_as_printed(prometheus, traced, "funclatency_series_folded_total",
                              lambda r: r["series_folded"]) == 0
    for reason in ("unreturned", "depth", "ringbuf"):
        assert self_metric(prometheus, f'funclatency_lost_calls_total{{reason="{reason}"}}') == 0
    # Not under the traced functions' prefix.
    assert prometheus.query('{__name__=~"ebpf_funclatency_.*|ebpf_attached_.*"}') == []

    # The container's process is its own series, labelled with the runtime;
    # the others (the test's own cgroup) have none.
    in_container = prometheus.query('ebpf_function_latency_ms_count{container_runtime="podman"}')
    assert len(in_container) == 1, in_container
    labels, count = in_container[0]
    assert labels["container_id"] == container_id, labels
    assert count == truths[0]["returned"], (count, truths[0])
    on_host = prometheus.query('ebpf_function_latency_ms_count{container_runtime=""}')
    assert [value for _, value in on_host] == [2 * CALLS], on_host

    # A new program at the followed path (a new file: another image version)
    # without slow_op: the process stays untraced, a no_function failure.
    sleep_copy = tmp_path / "sleep-as-target-app"
    shutil.copy2(shutil.which("sleep"), sleep_copy)
    os.replace(sleep_copy, app)
    procs.spawn([app, "30"])
    settled(prometheus, traced, 'funclatency_attach_failures_total{reason="no_function"}',
            failures("no_function"), 1)
    assert scraped_as_printed(prometheus, traced, "funclatency_attached_files",
                              lambda r: r["files_attached"]) == 1
    assert scraped_as_printed(prometheus, traced,
                              'funclatency_attach_failures_total{reason="kernel_refused"}',
                              failures("kernel_refused")) == 0

    target = prometheus.api("targets")["activeTargets"][0]
    assert target["health"] == "up" and target["lastError"] == "", target
    assert traced.stop() == 0, traced.describe()


def capabilities(pid, tid):
    """CapEff and CapPrm of one thread, as integers."""
    with open(f"/proc/{pid}/task/{tid}/status") as status:
        fields = dict(line.split(":", 1) for line in status if line.startswith("Cap"))
    return int(fields["CapEff"], 16), int(fields["CapPrm"], 16)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_self_metrics_over_otlp_match_the_agent_records(procs, tool, target_app, tmp_path,
                                                        receiver_program, protocol):
    """The same self-metrics through a real OTLP receiver: the last request
    the agent sends (at its end) carries what its last {"type":"agent"}
    record says. With --slowest the main thread keeps capabilities
    permitted; the thread that reads the collector's answers has none."""
    app = tmp_path / "target-app"
    shutil.copy2(target_app, app)
    receiver = start_receiver(procs, receiver_program)
    traced = procs.spawn([tool, "--follow", f"--otlp={receiver.url(protocol)}",
                          "--otlp-protocol", protocol, "--slowest", "2", "--json", "-i", "1",
                          f"{app}:slow_op"])
    traced.wait_for_line("stderr", r"^Following ", TOOL_ATTACH_TIMEOUT)
    sender = thread_named(traced.pid, "fl-otlp")
    assert sender, "no fl-otlp thread"
    assert capabilities(traced.pid, traced.pid)[1] != 0  # kept for naming stacks
    assert capabilities(traced.pid, sender) == (0, 0)
    work = procs.start_workload(app, ["--calls", "300", "--threads", "1", "--rate", "300"])
    work.start()
    assert work.finish(timeout=60).function("slow_op")["returned"] == 300
    time.sleep(1.5)  # an interval after the last call
    assert traced.stop() == 0, traced.describe()

    last = latest_agent(traced)
    _, _, metrics = metrics_of(receiver.requests_once_quiet()[-1]["request"])

    def value(name, reason=None):
        metric = metrics[name]
        points = (metric.get("sum") or metric["gauge"])["data_points"]
        if reason is not None:
            points = [p for p in points if attributes(p.get("attributes"))["reason"] == reason]
        (point,) = points
        return point.get("as_double", point.get("as_int"))

    assert int(value("funclatency_attached_functions")) == last["functions_attached"] == 1
    assert int(value("funclatency_attached_files")) == last["files_attached"] == 1
    assert int(value("funclatency_exec_events")) == last["processes_seen"] >= 1
    assert float(value("funclatency_probe_cpu_seconds")) == pytest.approx(
        last["probe_cpu_seconds"], rel=1e-9, abs=1e-12)
    assert last["probe_cpu_seconds"] > 0
    for reason in ("no_function", "no_room", "kernel_refused"):
        assert int(value("funclatency_attach_failures", reason)) == failures(reason)(last) == 0
    assert metrics["funclatency_exec_events"]["sum"]["is_monotonic"] is True
    assert "gauge" in metrics["funclatency_attached_functions"]

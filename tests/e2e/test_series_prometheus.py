"""Per-process histograms in a real Prometheus: Debian's `prometheus` scrapes
`funclatency --by pid --prometheus` tracing three target-app processes, and
the dashboard query broken down by process,

    histogram_quantile(0.95, sum by (le, pid) (rate(ebpf_function_latency_ms_bucket[1m])))

returns one value per process, each in the log2 row of that process's own
p95 (the processes sleep 1x, 2x and 4x as long, so their rows differ). Once
the processes exit, Prometheus holds each one's exact call count and the
endpoint stops exposing their series."""

import math
import re
import signal

import pytest

from conftest import free_port, wait_until
from test_prometheus import PrometheusServer, http_get, truth_row_of_quantile

pytestmark = pytest.mark.bpf
# The query, unchanged.
QUERY = "histogram_quantile(0.95, sum by (le, pid) (rate(ebpf_function_latency_ms_bucket[1m])))"
# slow_op's top cluster (10% of the calls, ~5.8 ms) times 1, 2 and 4: the
# p95 lies well inside the log2 rows 4-8, 8-16 and 16-32 ms.
SLOW_SCALES = (1, 2, 4)
RATE = 50  # slow_op calls/s of each process
MIN_CALLS = 300  # per process before the quantiles are read


def calls_by_pid(prometheus):
    return {labels.get("pid"): value for labels, value in
            prometheus.query('ebpf_function_latency_ms_count{symbol="slow_op"}')}


def test_p95_by_pid_gives_one_value_per_process(procs, tool, private_app, tmp_path):
    endpoint = f"127.0.0.1:{free_port()}"
    # Scrapes twice as often as the tool's live reports, so the last report
    # of a process that exited (exposed once, for a second) is scraped.
    prometheus = PrometheusServer(procs, tmp_path, endpoint,
                                  job="    scrape_interval: 500ms\n    scrape_timeout: 500ms\n")
    works = [procs.start_workload(private_app, ["--calls", "0", "--threads", "1", "--rate",
                                                str(RATE), "--slow-scale", str(scale)])
             for scale in SLOW_SCALES]
    traced = procs.start_tool(tool, ["--by", "pid", "--prometheus", endpoint,
                                     f"{private_app}:slow_op"])
    for work in works:
        work.start()
    pids = {str(work.pid) for work in works}

    def enough_calls():
        seen = calls_by_pid(prometheus)
        return set(seen) == pids and min(seen.values()) >= MIN_CALLS

    assert wait_until(enough_calls, 60.0, interval=0.5), (
        f"Prometheus has {calls_by_pid(prometheus)}, want {MIN_CALLS}+ calls for each of "
        f"{sorted(pids)}\ntargets: {prometheus.api('targets')}\n{traced.describe()}")
    # rate() needs two scrapes of every bucket: wait for a finite value per process.
    assert wait_until(lambda: len(prometheus.query(QUERY)) == len(pids) and all(
        math.isfinite(v) for _, v in prometheus.query(QUERY)), 10.0, interval=0.5), \
        prometheus.query(QUERY)
    p95 = {}
    for labels, value in prometheus.query(QUERY):
        assert set(labels) == {"pid"}, labels
        p95[labels["pid"]] = value
    assert set(p95) == pids, p95

    for work in works:
        work.process.send(signal.SIGINT)
    truths = {str(work.pid): work.finish().function("slow_op") for work in works}

    # Each process's value is in the log2 row of its own p95, and the rows differ.
    rows = {}
    for pid, truth in truths.items():
        row = truth_row_of_quantile(0.95, truth)
        low_ms, high_ms = (1 << row) / 1000.0, (2 << row) / 1000.0
        assert low_ms <= p95[pid] <= high_ms, (
            f"pid {pid}: Prometheus' p95 {p95[pid]} ms, its own p95 is in [{low_ms}, "
            f"{high_ms}] ms\nall: {p95}")
        rows[pid] = row
    assert len(set(rows.values())) == len(SLOW_SCALES), rows

    # Every call of each process reached Prometheus: the last value scraped of
    # each series (stale markers aside) is the process's own count.
    def last_counts():
        return {labels["pid"]: value for labels, value in prometheus.query(
            'last_over_time(ebpf_function_latency_ms_count{symbol="slow_op"}[1m])')}

    expected = {pid: float(truth["returned"]) for pid, truth in truths.items()}
    assert wait_until(lambda: last_counts() == expected, 15.0, interval=0.5), (
        f"Prometheus' last counts {last_counts()}, the processes made {expected}")

    assert traced.stop() == 0, traced.describe()


def exposed_pids(endpoint):
    _, text = http_get(f"http://{endpoint}/metrics")
    return set(re.findall(r'pid="(\d+)"', text))


@pytest.mark.parametrize("interval", [[], ["-i", "1"]], ids=["no-interval", "interval"])
def test_series_of_an_exited_process_leave_the_endpoint(procs, tool, private_app, interval):
    """docs/why-slow.md: "a process that exited is reported once more, then its
    series are no longer exposed" -- also without -i, as deploy/'s systemd
    unit and DaemonSet run it."""
    endpoint = f"127.0.0.1:{free_port()}"
    work = procs.start_workload(private_app, ["--calls", "150", "--threads", "1",
                                              "--rate", "50"])
    traced = procs.start_tool(tool, ["--by", "pid", "--prometheus", endpoint, *interval,
                                     f"{private_app}:slow_op"])
    work.start()
    pid = str(work.pid)
    # Exposed while it runs (3 s)...
    assert wait_until(lambda: pid in exposed_pids(endpoint), 2.5, interval=0.1), \
        traced.describe()
    assert work.finish().function("slow_op")["returned"] == 150
    # ...and no longer a few reports after it exited.
    assert wait_until(lambda: pid not in exposed_pids(endpoint), 10.0, interval=0.25), (
        f"the series of process {pid}, which exited, are still exposed:\n"
        f"{http_get(f'http://{endpoint}/metrics')[1][:1500]}")
    assert traced.stop() == 0, traced.describe()

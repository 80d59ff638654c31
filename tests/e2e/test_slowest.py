"""--slowest and --slower-than against workload-slow_paths (-O2, no frame
pointers): one call of handle_request() in 1,000 sleeps 5 ms and always
comes through slow_path_outer -> slow_path_inner; the program writes each
slow call's thread, body time and caller-measured time (TRUTH.slow)."""

import json
import re
import signal
import time

import pytest

from conftest import build_dir, free_port, parse_json_records, totals_by_symbol, wait_until
from test_otlp import attributes, metrics_of, start_receiver
from test_prometheus import PrometheusServer

pytestmark = pytest.mark.bpf
MODES = ["events", "kernel"]
CALLS = 3000  # 3 slow calls
SLOW = 3
FUNCTION = "handle_request"


def slow_truth(work) -> list:
    return json.loads((work.truth_path.parent / (work.truth_path.name + ".slow")).read_text())


def run_traced(procs, tool, program, args):
    work = procs.start_workload(program, ["--calls", str(CALLS)])
    traced = procs.start_tool(tool, ["--json", "-p", work.pid, *args, f"{program}:{FUNCTION}"])
    work.start()
    truth = work.finish()
    assert traced.wait(30) == 0, traced.describe()
    return work, truth, traced


def match_truth(calls: list, truth: list, must_ns: int) -> list:
    """Pairs each of the tool's calls with the truth's row of the same thread
    whose bounds hold its duration (between the body's own time and the
    caller's measurement) and that returned closest in time (the calls the
    truth lists are milliseconds apart). A row whose body took at least
    `must_ns` must be paired (the tool had to see it); the others (calls a
    preemption made long) may not be. Returns [(call, row)]."""
    pairs, taken = [], set()
    for call in calls:
        candidates = [(abs(row["end_unix_ns"] - call["time_unix_nano"]), index)
                      for index, row in enumerate(truth)
                      if index not in taken and row["tid"] == call["tid"]
                      and row["body_ns"] <= call["duration_ns"] <= row["caller_ns"]]
        assert candidates, f"{call} is none of the truth's calls {truth}"
        distance, index = min(candidates)
        assert distance < 20_000_000, f"{call} ended {distance} ns from {truth[index]}"
        taken.add(index)
        pairs.append((call, truth[index]))
    missed = [row for index, row in enumerate(truth)
              if index not in taken and row["body_ns"] >= must_ns]
    assert not missed, f"missed {missed}; calls {calls}"
    return pairs


def assert_calls_match_truth(calls: list, truth: list, pid: int, must_ns: int):
    assert all(call["pid"] == pid for call in calls), calls
    return match_truth(calls, truth, must_ns)


def symbols_of(call: dict) -> list:
    return [frame.get("symbol", "") for frame in call["stack"]]


def assert_stack_of(call: dict, row: dict, program):
    """A slow-path call's stack; a fast call a preemption made long has the
    fast path's callers instead."""
    if row["slow_path"]:
        assert_slow_path_stack(call, program)
    else:
        symbols = symbols_of(call)
        assert "fast_path_inner" in symbols and "slow_path_inner" not in symbols, symbols


def assert_slow_path_stack(call: dict, program):
    """Both callers of the slow path and main, innermost first; nothing of
    the fast path."""
    symbols = symbols_of(call)
    for caller in ("slow_path_inner", "slow_path_outer", "main"):
        assert caller in symbols, f"{caller} missing from {symbols}"
    assert (symbols.index("slow_path_inner") < symbols.index("slow_path_outer")
            < symbols.index("main")), symbols
    assert not [s for s in symbols if s.startswith("fast_path")], symbols
    inner = call["stack"][symbols.index("slow_path_inner")]
    assert inner["binary"] == str(program), inner


@pytest.mark.parametrize("mode", MODES)
def test_slowest_names_the_slow_calls_and_their_stacks(procs, tool, workload, mode):
    program = workload("slow_paths")
    work, truth, traced = run_traced(procs, tool, program, ["--slowest", "3", "--mode", mode])
    record = totals_by_symbol(traced.text("stdout"))[FUNCTION]
    assert record["count"] == truth.function(FUNCTION)["returned"] == CALLS
    assert record["slow_dropped"] == 0, record
    exemplars = record["exemplars"]
    assert len(exemplars) == SLOW, exemplars
    # The 3 slowest: no call of the truth whose body alone took longer than
    # the least of them is missing.
    pairs = assert_calls_match_truth(exemplars, slow_truth(work), work.pid,
                                     min(e["duration_ns"] for e in exemplars) + 1)
    for call, row in pairs:
        assert_stack_of(call, row, program)


@pytest.mark.parametrize("mode", MODES)
def test_slower_than_prints_exactly_the_slower_calls(procs, tool, workload, mode):
    program = workload("slow_paths")
    work, truth, traced = run_traced(procs, tool, program, ["--slower-than", "1ms", "--mode", mode])
    records = parse_json_records(traced.text("stdout"))
    slow_lines = [r for r in records if r.get("type") == "slow_call"]
    assert all(r["symbol"] == FUNCTION and r["threshold_ns"] == 1_000_000 for r in slow_lines)
    # Every call whose body alone took 1 ms, and no call the caller saw
    # shorter than that (the truth lists calls from 500 us).
    pairs = assert_calls_match_truth(slow_lines, slow_truth(work), work.pid, 1_000_000)
    assert sum(row["slow_path"] for _, row in pairs) == SLOW, pairs
    for call, row in pairs:
        assert_stack_of(call, row, program)
    # The histogram still counts every call, once.
    assert totals_by_symbol(traced.text("stdout"))[FUNCTION]["count"] == CALLS


def test_console_shows_the_slowest_block(procs, tool, workload):
    program = workload("slow_paths")
    work = procs.start_workload(program, ["--calls", str(CALLS)])
    traced = procs.start_tool(tool, ["--slowest", "2", "-p", work.pid, f"{program}:{FUNCTION}"])
    work.start()
    work.finish()
    assert traced.wait(30) == 0, traced.describe()
    out = traced.text("stdout")
    assert "slowest:" in out, out
    block = out[out.index("slowest:"):]
    assert block.count(f"tid {work.pid}") == 2, block
    assert "slow_path_outer+0x" in block, block
    # A fast call shows only when a preemption made it as long as one the
    # program itself measured (the machine may be busy).
    truth = slow_truth(work)
    for entry in re.split(r"\n(?=  \d)", block.split("\n", 1)[1]):
        shown_ms = float(re.match(r"\s*([\d.]+)ms", entry).group(1))
        if "fast_path" in entry:
            assert any(not row["slow_path"] and row["caller_ns"] >= (shown_ms - 0.005) * 1e6
                       for row in truth), (entry, truth)
        else:
            assert "slow_path_outer+0x" in entry, entry


def test_prometheus_stores_the_slow_calls_as_exemplars(procs, tool, workload, tmp_path):
    """Debian's prometheus with exemplar storage scrapes OpenMetrics from
    --prometheus; /api/v1/query_exemplars returns slow calls of the
    workload's thread, each over the 5 ms sleep."""
    program = workload("slow_paths")
    endpoint = f"127.0.0.1:{free_port()}"
    prometheus = PrometheusServer(procs, tmp_path, endpoint,
                                  flags=["--enable-feature=exemplar-storage"])
    work = procs.start_workload(program, ["--calls", "0"])
    traced = procs.start_tool(tool, ["--slowest", "3", "--prometheus", endpoint, "-p", work.pid,
                                     f"{program}:{FUNCTION}"])
    work.start()
    query = f'ebpf_function_latency_ms_bucket{{symbol="{FUNCTION}"}}'

    def exemplars():
        now = time.time()
        data = prometheus.api("query_exemplars", query=query, start=now - 600, end=now + 60)
        return [e for series in data for e in series["exemplars"]]

    assert wait_until(lambda: len(exemplars()) > 0, 30.0, interval=0.5), (
        f"no exemplars\ntargets: {prometheus.api('targets')}\n{traced.describe()}")
    found = exemplars()
    for exemplar in found:
        labels = exemplar["labels"]
        assert labels["pid"] == str(work.pid) and labels["tid"] == str(work.pid), exemplar
        # The sleep is 5 ms; nothing else in the program comes close.
        assert 5.0 <= float(exemplar["value"]) < 100.0, exemplar
    work.process.send(signal.SIGINT)
    work.finish()
    assert traced.wait(30) == 0, traced.describe()


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_otlp_receiver_decodes_the_slow_calls_as_exemplars(procs, tool, workload, protocol):
    """A real OTLP receiver decodes the final export: the histogram point of
    handle_request carries the 3 slow calls as exemplars (value in ms within
    the truth's bounds, pid, thread id, a stack naming the slow path)."""
    receiver = start_receiver(procs, build_dir() / "tests" / "programs" / "otlp-receiver")
    program = workload("slow_paths")
    work = procs.start_workload(program, ["--calls", str(CALLS)])
    traced = procs.start_tool(tool, ["-p", work.pid, "--slowest", "3",
                                     f"--otlp={receiver.url(protocol)}", "--otlp-protocol",
                                     protocol, f"{program}:{FUNCTION}"])
    work.start()
    work.finish()
    assert traced.wait(30) == 0, traced.describe()
    _, _, metrics = metrics_of(receiver.wait_for_requests(1)[-1]["request"])
    points = metrics["function_latency_ms"]["histogram"]["data_points"]
    point = next(p for p in points if attributes(p["attributes"])["symbol"] == FUNCTION)
    exemplars = point["exemplars"]
    calls = [{"duration_ns": round(e["as_double"] * 1e6), "time_unix_nano": int(e["time_unix_nano"]),
              "pid": int(attributes(e["filtered_attributes"])["process.pid"]),
              "tid": int(attributes(e["filtered_attributes"])["thread.id"]),
              "stacktrace": attributes(e["filtered_attributes"])["code.stacktrace"]}
             for e in exemplars]
    truth = slow_truth(work)
    # as_double carries the duration in ms: allow the rounding back to ns.
    for expected in truth:
        expected["body_ns"] -= 1
        expected["caller_ns"] += 1
    assert len(calls) == SLOW, calls
    pairs = assert_calls_match_truth(calls, truth, work.pid,
                                     min(c["duration_ns"] for c in calls) + 2)
    for call, row in pairs:
        if not row["slow_path"]:
            continue
        frames = call["stacktrace"].splitlines()
        assert any(f.startswith("slow_path_inner+0x") for f in frames), frames
        assert not any(f.startswith("fast_path") for f in frames), frames


def test_every_interval_names_its_own_slowest_call(procs, tool, target_app):
    """With -i, each interval has its slowest call even when it is faster
    than an earlier interval's: in events mode (exact max) the first
    exemplar of every interval record is its max_ns, and of the totals the
    run's. Many short intervals: a call near a switch must be judged by the
    probes under the interval that counts it (one judged by the last
    interval's slowest went without its stack: 1 interval in ~60)."""
    work = procs.start_workload(target_app, ["--calls", "0", "--threads", "4"])
    traced = procs.start_tool(tool, ["--json", "--mode", "events", "-i", "0.1", "-d", "3",
                                     "--slowest", "2", "-p", work.pid, f"{target_app}:slow_op"])
    work.start()
    assert traced.wait(30) == 0, traced.describe()
    records = [r for r in parse_json_records(traced.text("stdout")) if r.get("count")]
    intervals = [r for r in records if r["type"] == "interval"]
    assert len(intervals) >= 20, records
    for record in records:
        exemplars = record.get("exemplars", [])
        assert len(exemplars) == min(2, record["count"]), record
        assert exemplars[0]["duration_ns"] == record["max_ns"], record
        assert exemplars[0]["duration_ns"] >= exemplars[-1]["duration_ns"] >= record["min_ns"]
    assert record["type"] == "total"
    assert record["max_ns"] == max(r["max_ns"] for r in intervals)

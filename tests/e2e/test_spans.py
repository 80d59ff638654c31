"""Why: a span runs from one function's probe point to another's, matched by
a value, across threads. job-queue submits jobs on its main thread
(submit_job(job)) and workers complete them after sleeping (complete_job
(job)); it measures each job itself. In both modes: every completed job is
one span, their sum, min and max lie in the program's own bounds, a key
started again before its end and a span left open at exit are each counted
lost by reason, and nothing is paired with the wrong end."""

import pytest

from conftest import build_dir, built, run_tool, assert_refused, totals_by_symbol

pytestmark = pytest.mark.bpf


def job_queue():
    return built(build_dir() / "tests" / "programs" / "job-queue", "job-queue")


@pytest.mark.parametrize("mode", ["events", "kernel", "auto"])
def test_job_spans_counted_exactly_within_the_programs_bounds(procs, tool, mode):
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "300", "--workers", "4", "--reused", "7",
                                          "--left-open", "5"])
    args = ["--json", "--mode", mode, "-p", str(work.pid),
            "--span", f"job={program}:submit_job:arg0 -> complete_job:arg0"]
    if mode == "auto":
        args += ["--auto-threshold", "50"]  # the switch to kernel mode happens mid-run
    traced = procs.start_tool(tool, args)
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["job"]
    assert record["kind"] == "span", record
    assert record["count"] == truth["completed"] == 300, (record, truth)
    assert record["lost_span_reused"] == truth["reused"], record
    assert record["lost_span_open"] == truth["left_open"], record
    assert record["lost_span_full"] == 0, record
    assert record["lost"] == truth["reused"] + truth["left_open"], record
    # A span is never shorter than the program's least time between the two
    # calls, nor longer than from the start's call to the end's return.
    assert truth["min_low_ns"] <= record["min_ns"], (record, truth)
    assert record["max_ns"] <= truth["max_high_ns"], (record, truth)
    assert truth["sum_low_ns"] <= record["sum_ns"] <= truth["sum_high_ns"], (record, truth)
    # The two kinds of job show: rows at and above each sleep.
    rows = {low_ns: count for low_ns, _, count in record["log2_buckets"]}
    assert sum(count for low, count in rows.items() if low >= 8_000_000) >= truth["long"], rows


def test_span_capacity_full_is_counted(procs, tool):
    """A start the open-span map has no room for is lost, counted (never an
    end paired with another start)."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "20", "--workers", "1", "--left-open", "40"])
    traced = procs.start_tool(tool, ["--json", "-p", str(work.pid), "--span-capacity", "16",
                                     "--span", f"job={program}:submit_job:arg0 -> "
                                               "complete_job:arg0"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["job"]
    assert record["count"] == truth["completed"], record
    # 40 starts into a map of 16: 16 stay open at exit, 24 found no room.
    assert record["lost_span_open"] == 16, record
    assert record["lost_span_full"] == 24, record


def test_thread_span_on_one_thread(procs, tool):
    """Matched by the thread: complete_job's entry to its return, on the
    worker, is as many spans as jobs."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "50"])
    traced = procs.start_tool(tool, ["--json", "-p", str(work.pid), "--span",
                                     f"call={program}:complete_job:entry -> complete_job:return"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["call"]
    assert record["count"] == truth["completed"] == 50, record
    assert record["lost"] == 0, record
    assert record["max_ns"] < 5_000_000, record


@pytest.mark.parametrize("span, pattern", [
    ("job=x:submit_job:arg0", "no \" -> \""),
    ("job=x:submit_job:arg0 -> complete_job:entry", "one point carries a value"),
    ("job=x:submit_job:arg9 -> complete_job:arg0", "not entry, return, ret or arg0..arg5"),
    ("=x:a:entry -> b:entry", "NAME"),
    ("job=x:a:entry -> b:entry any-process", "any-process needs a by-value span"),
])
def test_bad_spans_refused(tool, span, pattern):
    assert_refused(run_tool(tool, ["--span", span]), pattern)

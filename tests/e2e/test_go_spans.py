"""Why: a span over Go code is matched by the goroutine, not the thread (a
goroutine parked in a sleep resumes on another thread), and its values come
from Go's register ABI. go-workload --scenario spans (tests/programs/go/
spans.go) runs 40 goroutines on 2 threads, each 10 rounds of two spans:
`handle`, main.spanBegin's entry to main.spanFinish's return across a sleep
and a yield on one goroutine, and `job`, main.spanSubmit(id) to
main.spanDone(id) on a worker goroutine, and `created`, from the id
main.spanNewID returns to main.spanDone(id). The program measures each span's
bounds itself: every span is counted exactly, none lost, their min, max and
sum within those bounds, in both modes, in a stripped binary too."""

import pytest

from conftest import assert_refused, build_dir, built, run_tool, totals_by_symbol

pytestmark = pytest.mark.bpf

SPANS = 40 * 10  # goroutines x rounds, the scenario's defaults


def span_args(program):
    return ["--span", f"handle={program}:main.spanBegin:entry -> main.spanFinish:return",
            "--span", f"job={program}:main.spanSubmit:arg0 -> main.spanDone:arg0",
            "--span", f"created={program}:main.spanNewID:ret -> main.spanDone:arg0"]


@pytest.mark.parametrize("mode, variant", [("events", "go-workload"),
                                           ("kernel", "go-workload"),
                                           ("events", "go-workload-stripped")])
def test_go_spans_counted_exactly_within_the_programs_bounds(procs, tool, go_program, mode,
                                                             variant):
    program = go_program(variant)
    work = procs.start_workload(program, ["--scenario", "spans"])
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", str(work.pid),
                                     *span_args(program)])
    work.start()
    truth = {span["name"]: span for span in work.finish().data["spans"]}
    assert traced.wait(30) == 0, traced.describe()
    records = totals_by_symbol(traced.text("stdout"))
    # The point of the scenario: goroutines end their spans on other threads.
    assert truth["handle"]["migrated"] > 0, truth
    for name in ("handle", "job", "created"):
        record, expected = records[name], truth[name]
        assert record["kind"] == "span", record
        assert record["mode"] == mode, record
        assert record["count"] == expected["count"] == SPANS, (record, expected)
        assert record["lost"] == 0, record
        assert record["span_unstarted"] == 0, record
        # No shorter than between the two calls, no longer than around both.
        assert expected["min_low_ns"] <= record["min_ns"], (record, expected)
        assert record["max_ns"] <= expected["max_high_ns"], (record, expected)
        assert expected["sum_low_ns"] <= record["sum_ns"] <= expected["sum_high_ns"], \
            (record, expected)


def test_span_from_go_to_other_code_is_refused(tool, go_program):
    go = go_program("go-workload")
    queue = built(build_dir() / "tests" / "programs" / "job-queue", "job-queue")
    assert_refused(run_tool(tool, ["--span", f"mixed={go}:main.spanBegin:entry -> "
                                             f"{queue}:complete_job:return"]),
                   r"span mixed: main\.spanBegin is Go code and complete_job is not")


def test_go_span_at_an_entry_that_calls_morestack_starts_once(procs, tool, go_program):
    """main.bigframe's 16 KiB frame makes its entry call morestack on each
    fresh goroutine, after which the prologue runs again: the span's start
    fires once per call (a second firing would restart the span, counted
    lost as reused), and the span is the call, within the caller's bounds."""
    program = go_program("go-workload")
    work = procs.start_workload(program, ["--scenario", "grow"])
    traced = procs.start_tool(tool, ["--json", "-p", str(work.pid), "--span",
                                     f"big={program}:main.bigframe:entry -> main.bigframe:return"])
    work.start()
    truth = work.finish().function("main.bigframe")
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["big"]
    assert truth["stack_moved"] == truth["returned"] == 40, truth
    assert record["count"] == 40, record
    assert record["lost"] == 0 and record["span_unstarted"] == 0, record
    assert truth["body_sum_ns"] <= record["sum_ns"] <= truth["sum_ns"], (record, truth)
    assert record["max_ns"] <= truth["max_ns"], (record, truth)


def test_go_span_slowest_with_the_goroutines_stack_at_the_end(procs, tool, go_program):
    """--slowest keeps the slowest Go spans with the goroutine's stack where
    they ended: at main.spanFinish's ret, called by the goroutine's function;
    at main.spanDone's entry on a worker goroutine."""
    program = go_program("go-workload")
    work = procs.start_workload(program, ["--scenario", "spans"])
    traced = procs.start_tool(tool, ["--json", "--slowest", "2", "-p", str(work.pid),
                                     *span_args(program)])
    work.start()
    truth = {span["name"]: span for span in work.finish().data["spans"]}
    assert traced.wait(30) == 0, traced.describe()
    records = totals_by_symbol(traced.text("stdout"))
    for name, end, caller in [("handle", "main.spanFinish", "main.runSpans.func2"),
                              ("created", "main.spanDone", "main.runSpans.func1")]:
        exemplars = records[name]["exemplars"]
        assert len(exemplars) == 2, records[name]
        for exemplar in exemplars:
            assert exemplar["duration_ns"] <= truth[name]["max_high_ns"], exemplar
            frames = [frame.get("symbol") for frame in exemplar["stack"]]
            assert frames[:2] == [end, caller], frames

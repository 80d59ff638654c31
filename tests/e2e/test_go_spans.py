"""Why: a span over Go code is matched by the goroutine, not the thread (a
goroutine parked in a sleep resumes on another thread), and its values come
from Go's register ABI. go-workload --scenario spans (tests/programs/go/
spans.go) runs 40 goroutines on 2 threads, each 10 rounds of two spans:
`handle`, main.spanBegin's entry to main.spanFinish's return across a sleep
and a yield on one goroutine, and `job`, main.spanSubmit(id) to
main.spanDone(id) on a worker goroutine. The program measures each span's
bounds itself: every span is counted exactly, none lost, their min, max and
sum within those bounds, in both modes, in a stripped binary too."""

import pytest

from conftest import assert_refused, build_dir, built, run_tool, totals_by_symbol

pytestmark = pytest.mark.bpf

SPANS = 40 * 10  # goroutines x rounds, the scenario's defaults


def span_args(program):
    return ["--span", f"handle={program}:main.spanBegin:entry -> main.spanFinish:return",
            "--span", f"job={program}:main.spanSubmit:arg0 -> main.spanDone:arg0"]


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
    for name in ("handle", "job"):
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

"""Why: the slowest calls of a process that exits right after making them
must still be named. exit-fast makes 6,000 calls, the last 6 slow (10 ms,
through slow_caller), and exits at once; traced with --slowest 3 -i 30
(the run's interval never closes before the process is gone), every
exemplar, in both modes, names its frames through main (before the fix,
events mode gave bare addresses: the maps were read after the exit)."""

import pytest

from conftest import build_dir, built, totals_by_symbol

pytestmark = pytest.mark.bpf
FUNCTION = "exit_fast_call"
CALLS = 6000
SLOW = 6
KEPT = 3
SLOW_NS = 10_000_000


@pytest.fixture(scope="module")
def exit_fast():
    return built(build_dir() / "tests" / "programs" / "exit-fast", "exit-fast")


def trace_once(procs, tool, program, mode, by_pid):
    work = procs.start_workload(program, ["--calls", str(CALLS), "--slow", str(SLOW)])
    scope = ["-p", str(work.pid)] if by_pid else []
    traced = procs.start_tool(tool, ["--json", "--slowest", str(KEPT), "-i", "30", "--mode", mode,
                                     *scope, f"{program}:{FUNCTION}"])
    work.start()
    truth = work.finish()
    if not by_pid:
        traced.stop()
    assert traced.wait(30) == 0, traced.describe()
    return work, truth, totals_by_symbol(traced.text("stdout"))[FUNCTION]


@pytest.mark.parametrize("by_pid", [True, False], ids=["pid", "path"])
@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_exemplars_of_an_exited_process_name_their_frames(procs, tool, exit_fast, mode, by_pid):
    # The race is one of timing: a few runs, each must be right.
    for _ in range(3):
        work, truth, record = trace_once(procs, tool, exit_fast, mode, by_pid)
        fn = truth.function(FUNCTION)
        assert fn["returned"] == CALLS and fn["slow"] == SLOW, fn
        assert record["count"] == CALLS, record
        exemplars = record["exemplars"]
        assert len(exemplars) == KEPT, exemplars
        for call in exemplars:
            assert call["pid"] == work.pid, call
            # A slow call, or (on a busy machine) a fast one a preemption
            # made as long: either way called from main, directly or
            # through slow_caller.
            symbols = [frame.get("symbol", "") for frame in call["stack"]]
            assert "main" in symbols, f"main missing from {call['stack']}"
            # Every frame up to main is named, in the program's binary.
            for frame in call["stack"][:symbols.index("main") + 1]:
                assert frame.get("binary") == str(exit_fast), call["stack"]
                assert frame.get("symbol") in (FUNCTION, "slow_caller", "main"), call["stack"]
            # Longer than any fast call took by its caller's clock: a slow
            # one, named through slow_caller.
            if call["duration_ns"] > fn["fast_max_ns"]:
                assert "slow_caller" in symbols, call["stack"]
        # The 6 slow calls are at least 10 ms each: the 3 slowest are.
        assert all(call["duration_ns"] >= SLOW_NS for call in exemplars), exemplars

"""Why: the slowest calls of a process that exits right after making them
must still be named. exit-fast makes 6,000 calls, the last 6 slow (100 ms,
through slow_caller), and exits at once; traced with --slowest 3 -i 30
(the run's interval never closes before the process is gone), every
exemplar, in both modes, names its frames through main. And when the
tracer names the slow calls only after the exit (it is stopped meanwhile,
as a busy machine may keep it off the CPU), their frames in a library no
earlier stack reached are still named: the process was taken in, files
and all, when its first record arrived (before the fix they stopped at
the library, unnamed: its file was opened only after the exit)."""

import os
import signal
import time

import pytest

from conftest import build_dir, built, totals_by_symbol

pytestmark = pytest.mark.bpf
FUNCTION = "exit_fast_call"
CALLS = 6000
SLOW = 6
KEPT = 3
SLOW_NS = 100_000_000


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
        # The 6 slow calls are at least 100 ms each (a preemption may make
        # a fast call as long on a busy machine, never longer than its
        # caller saw): the 3 slowest are that long.
        assert all(call["duration_ns"] >= SLOW_NS for call in exemplars), exemplars


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_stacks_named_after_the_exit_reach_main_through_a_library(procs, tool, exit_fast, mode):
    plugin = build_dir() / "tests" / "programs" / "libexit-fast-plugin.so"
    built(plugin, "exit-fast-plugin")
    work = procs.start_workload(exit_fast, ["--calls", str(CALLS), "--slow", str(SLOW),
                                            "--plugin", str(plugin), "--pause-before-slow"])
    traced = procs.start_tool(tool, ["--json", "--slowest", str(KEPT), "-i", "30", "--mode", mode,
                                     "-p", str(work.pid), f"{exit_fast}:{FUNCTION}"])
    work.start()
    work.process.wait_for_line("stdout", r"^fast calls done$", 30)
    # The first fast calls' records reach the tracer while the process runs.
    time.sleep(1.0)
    traced.send(signal.SIGSTOP)
    try:
        os.kill(work.pid, signal.SIGUSR1)
        fn = work.finish().function(FUNCTION)
    finally:
        traced.send(signal.SIGCONT)
    assert traced.wait(30) == 0, traced.describe()
    assert fn["returned"] == CALLS and fn["slow"] == SLOW, fn
    record = totals_by_symbol(traced.text("stdout"))[FUNCTION]
    assert record["count"] == CALLS, record
    exemplars = record["exemplars"]
    assert len(exemplars) == KEPT, exemplars
    # Those longer than any fast call (by the program's clock) are slow ones.
    slow_ones = [call for call in exemplars if call["duration_ns"] > fn["fast_max_ns"]]
    assert slow_ones, (exemplars, fn)
    for call in slow_ones:
        symbols = [frame.get("symbol", "") for frame in call["stack"]]
        for name in ("plugin_slow_path", "slow_caller", "main"):
            assert name in symbols, f"{name} missing from {call['stack']}"
        assert (symbols.index("plugin_slow_path") < symbols.index("slow_caller")
                < symbols.index("main")), symbols
        assert call["stack"][symbols.index("plugin_slow_path")]["binary"] == str(plugin), call
        for frame in call["stack"][:symbols.index("main") + 1]:
            assert frame.get("symbol"), call["stack"]

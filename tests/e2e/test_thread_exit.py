"""Why: a call whose thread ends inside it (pthread_exit) never returns, and
no later call of that thread can show its frame abandoned; it is a lost
call all the same. thread-exit: 4 threads, each 100 calls of
thread_exit_op that return, then one that ends the thread from inside; in
both modes, calls counted = calls returned and lost = calls abandoned, so
counted + lost = calls made (before, the 4 were neither)."""

import pytest

from conftest import build_dir, built, totals_by_symbol

pytestmark = pytest.mark.bpf
FUNCTION = "thread_exit_op"


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_calls_of_threads_that_end_inside_them_are_lost(procs, tool, mode):
    program = built(build_dir() / "tests" / "programs" / "thread-exit", "thread-exit")
    work = procs.start_workload(program, ["--threads", "4", "--calls", "100"])
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", str(work.pid),
                                     f"{program}:{FUNCTION}"])
    work.start()
    fn = work.finish().function(FUNCTION)
    assert traced.wait(30) == 0, traced.describe()
    assert (fn["calls"], fn["returned"], fn["abandoned"]) == (404, 400, 4), fn
    record = totals_by_symbol(traced.text("stdout"))[FUNCTION]
    assert record["count"] == fn["returned"], record
    assert record["lost_unreturned"] == fn["abandoned"], record
    assert record["count"] + record["lost"] == fn["calls"], record

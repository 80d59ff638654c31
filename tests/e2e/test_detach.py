"""However the tool ends (SIGINT, SIGTERM, -d, the -p process exiting), no
breakpoint remains: the function's first bytes in a still-running target equal
those in the file. Seen after the tool has exited; tests/bpf checks the same
while the tool is still alive."""

import signal

import pytest

from conftest import EXIT_TIMEOUT, assert_breakpoint_present, assert_nothing_attached

pytestmark = pytest.mark.bpf


def start_running_target(procs, target_app):
    # Calls go on until the test kills it; no --wait-signal.
    return procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)


def assert_patched_then_restored(traced, target, target_app, stop):
    assert_breakpoint_present(target, target_app, "slow_op")
    code = stop()
    assert code == 0, traced.describe()
    assert_nothing_attached(target, target_app, "slow_op")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("scope", ["system-wide", "pid"])
def test_signal_detaches(procs, tool, target_app, signum, scope):
    target = start_running_target(procs, target_app)
    pid_args = ["-p", target.pid] if scope == "pid" else []
    traced = procs.start_tool(tool, [*pid_args, f"{target_app}:slow_op"])
    assert_patched_then_restored(traced, target, target_app, lambda: traced.stop(signum))
    assert "slow_op:" in traced.text("stdout"), "no report printed at exit"


def test_duration_detaches(procs, tool, target_app):
    target = start_running_target(procs, target_app)
    traced = procs.start_tool(tool, ["-d", "1", f"{target_app}:slow_op"])
    assert_patched_then_restored(traced, target, target_app,
                                 lambda: traced.wait(EXIT_TIMEOUT + 1))


def test_pid_exit_ends_tool_and_detaches(procs, tool, target_app):
    bystander = start_running_target(procs, target_app)
    traced_process = start_running_target(procs, target_app)
    traced = procs.start_tool(tool, ["-p", traced_process.pid, f"{target_app}:slow_op"])
    assert_breakpoint_present(traced_process, target_app, "slow_op")
    assert traced_process.process.stop(signal.SIGTERM) == 0
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency -p did not exit 0 after the process exited\n{traced.describe()}"
    assert_nothing_attached(bystander, target_app, "slow_op")

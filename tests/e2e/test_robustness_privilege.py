"""Privilege: as an unprivileged user the tool names the capability it lacks
and exits 2; with only capabilities (no root) it works. Measured on kernel
6.18: CAP_BPF + CAP_PERFMON suffice to trace a binary (uprobe_multi links);
-p PID with ":FUNCTION" of another user's process also needs CAP_SYS_PTRACE
(to read /proc/PID/exe). CAP_SYS_ADMIN alone also works (it implies both)."""

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import EXIT_TIMEOUT, refusal_line, run_tool, totals_by_symbol

pytestmark = pytest.mark.bpf
NOBODY = 65534


def as_nobody(caps=()):
    """setpriv arguments that start a command as user nobody holding only `caps`
    (e.g. ["bpf", "perfmon"]) as ambient capabilities."""
    wanted = ",".join(["-all", *(f"+{cap}" for cap in caps)])
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            f"--inh-caps={wanted}", f"--ambient-caps={wanted}"]


@pytest.fixture(autouse=True)
def needs_root_and_setpriv(tool, target_app):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the tool as user nobody")
    for path in (tool, target_app):
        if os.stat(path).st_mode & 0o005 != 0o005:
            pytest.skip(f"{path} is not readable and executable by others")


def run_as_nobody(tool, caps, args):
    command = as_nobody(caps)
    return run_tool(Path(command[0]), [*command[1:], tool, *args])


def test_unprivileged_user_is_told_what_is_missing(tool, target_app):
    message = refusal_line(run_as_nobody(tool, [], ["-d", "1", f"{target_app}:slow_op"]))
    assert re.search(r"CAP_BPF", message), message
    assert re.search(r"CAP_PERFMON", message), message


def test_only_the_missing_capability_is_named(tool, target_app):
    message = refusal_line(run_as_nobody(tool, ["bpf"], ["-d", "1", f"{target_app}:slow_op"]))
    assert "CAP_PERFMON" in message, message
    assert "CAP_BPF" not in message and "CAP_SYS_ADMIN" not in message, message


def trace_as_nobody(procs, tool, target_app, caps, target_args):
    work = procs.start_workload(target_app, ["--calls", "100", "--seed", "3"])
    command = as_nobody(caps)
    args = [*command[1:], tool, "--json", "-p", str(work.pid),
            *[arg.format(app=target_app) for arg in target_args]]
    traced = procs.start_tool(Path(command[0]), args)
    work.start()
    truth = work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert record["count"] == truth.function("slow_op")["calls"] == 100, record
    assert record["lost"] == 0, record


def test_bpf_and_perfmon_are_enough_for_a_binary(procs, tool, target_app):
    trace_as_nobody(procs, tool, target_app, ["bpf", "perfmon"], ["{app}:slow_op"])


def test_pid_function_of_another_users_process_with_sys_ptrace(procs, tool, target_app):
    trace_as_nobody(procs, tool, target_app, ["bpf", "perfmon", "sys_ptrace"], [":slow_op"])


def test_pid_without_sys_ptrace_names_it(procs, tool, target_app):
    work = procs.start_workload(target_app, ["--rate", "50"], wait_signal=False)
    message = refusal_line(run_as_nobody(tool, ["bpf", "perfmon"], ["-p", work.pid, ":slow_op"]))
    assert "CAP_SYS_PTRACE" in message, message

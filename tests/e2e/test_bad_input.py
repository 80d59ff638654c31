"""Bad input: one clear line on stderr naming the input, exit code 2, and
nothing left attached in a running target."""

import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import assert_nothing_attached, assert_refused, run_tool


def test_missing_binary(tool):
    assert_refused(run_tool(tool, ["/nonexistent/dir/prog:main"]), r"/nonexistent/dir/prog")


def test_program_not_on_path(tool):
    assert_refused(run_tool(tool, ["no_such_program_xyz:main"]), r"no_such_program_xyz")


def test_file_that_is_not_elf(tool, tmp_path):
    script = tmp_path / "script.sh"
    script.write_text("#!/bin/sh\necho hello\n")
    script.chmod(0o755)
    assert_refused(run_tool(tool, [f"{script}:main"]), re.escape(str(script)), r"ELF")


def test_function_that_does_not_exist_suggests_close_names(tool, target_app):
    assert_refused(run_tool(tool, [f"{target_app}:slwo_op"]), r"slwo_op", r"slow_op")


def test_pid_that_does_not_exist(tool):
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    missing = pid_max + 1  # above pid_max: no process can have it
    assert_refused(run_tool(tool, ["-p", missing, ":slow_op"]), str(missing))


@pytest.fixture
def running_target(procs, target_app):
    return procs.start_workload(target_app, ["--rate", "100"], wait_signal=False)


@pytest.mark.bpf
def test_good_then_bad_function_leaves_nothing_attached(tool, target_app, running_target):
    result = run_tool(tool, ["-p", running_target.pid, f"{target_app}:slow_op",
                             f"{target_app}:slwo_op"])
    assert_refused(result, r"slwo_op", r"slow_op")
    assert_nothing_attached(running_target, target_app, "slow_op")


@pytest.mark.bpf
def test_good_then_missing_binary_leaves_nothing_attached(tool, target_app, running_target):
    result = run_tool(tool, [f"{target_app}:slow_op", "/nonexistent/dir/prog:main"])
    assert_refused(result, r"/nonexistent/dir/prog")
    assert_nothing_attached(running_target, target_app, "slow_op")


@pytest.mark.bpf
def test_no_privilege_to_load_bpf(tool, target_app, running_target):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run the tool as user nobody")
    for path in (tool, target_app):
        if not os.access(path, os.R_OK) or os.stat(path).st_mode & 0o005 != 0o005:
            pytest.skip(f"{path} is not readable and executable by others")
    unprivileged = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                    "--inh-caps=-all"]
    result = run_tool(Path(unprivileged[0]),
                      [*unprivileged[1:], tool, "-p", running_target.pid, f"{target_app}:slow_op"])
    assert_refused(result, r"(?i)CAP_BPF|root|permi|privilege")
    assert_nothing_attached(running_target, target_app, "slow_op")

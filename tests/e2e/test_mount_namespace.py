"""A process in a mount namespace of its own (a container's situation): its
binary and its library live on a tmpfs that only it sees, at paths that do not
exist for the tool. `-p PID :FUNCTION`, `-p PID /path/inside:FUNCTION` and
`-p PID lib:FUNCTION` find them through /proc/PID/root and the process's own
maps, count every call, and report `binary` as the path the process knows
(not /proc/PID/exe or /proc/PID/root/..., which change with every restart)."""

import json
import os
import shutil
import signal

import pytest

from conftest import (EXIT_TIMEOUT, READY_TIMEOUT, Workload, build_dir, record_problems,
                      totals_by_symbol)

pytestmark = pytest.mark.bpf

# Mounts a tmpfs over $1 in a new mount namespace, copies the files named
# after `--` into it ($1/<basename>), then execs $2 with the remaining
# arguments: the PID stays the one Popen saw.
PRIVATE_SHELL = r'''
set -e
dir=$1; shift
program=$1; shift
mount -t tmpfs funclatency-private "$dir"
while [ "$1" != "--" ]; do cp "$1" "$dir/"; shift; done
shift
exec "$dir/$program" "$@"
'''


def spawn_private(procs, private_dir, files, program, args):
    """Starts `program` (one of `files`, copied into `private_dir`) in a
    private mount namespace; waits for its "ready pid=N" line."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux) is needed to make a private mount namespace")
    private_dir.mkdir()
    process = procs.spawn(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           PRIVATE_SHELL, "sh", private_dir, program, *files, "--", *args])
    line = process.wait_for_line("stdout", r"^ready pid=\d+", READY_TIMEOUT)
    assert line == f"ready pid={process.pid}", line
    inside = private_dir / program
    # The file is there for the process only.
    assert not inside.exists()
    assert os.path.exists(f"/proc/{process.pid}/root{inside}")
    assert os.readlink(f"/proc/{process.pid}/exe") == str(inside)
    return process


@pytest.mark.parametrize("mode", ["events", "kernel"])
@pytest.mark.parametrize("form", ["exe", "path inside"])
def test_binary_only_the_process_sees(procs, tool, target_app, tmp_path, mode, form):
    truth_path = tmp_path / "truth.json"
    private = tmp_path / "private"
    process = spawn_private(procs, private, [target_app], "target-app",
                            ["--wait-signal", "--truth", truth_path, "--calls", "200",
                             "--seed", "3"])
    inside = private / "target-app"
    target = ":slow_op" if form == "exe" else f"{inside}:slow_op"
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", process.pid, target])
    work = Workload(process, truth_path)
    work.start()
    truth = work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert record_problems(record, truth.function("slow_op")) == []
    assert record["count"] == 200
    assert record["mode"] == mode
    assert record["binary"] == str(inside)


@pytest.mark.parametrize("name", ["libplugin.so", "plugin"])
def test_library_only_the_process_sees(procs, tool, tmp_path, name):
    library = build_dir() / "tests" / "programs" / "naming" / "libnaming.so"
    dlopener = build_dir() / "tests" / "programs" / "dlopener"
    for path in (library, dlopener):
        if not path.is_file():
            pytest.fail(f"{path} is not built; build the naming-programs and dlopener targets")
    # libnaming.so under a name of its own, in the private directory.
    renamed = tmp_path / "libplugin.so"
    shutil.copy(library, renamed)
    private = tmp_path / "private"
    inside = private / "libplugin.so"
    truth_path = tmp_path / "truth.json"
    process = spawn_private(procs, private, [dlopener, renamed], "dlopener",
                            [inside, "naming_lib_op", "300", truth_path, "--pause-after-load"])
    os.kill(process.pid, signal.SIGUSR1)
    process.wait_for_line("stdout", r"^loaded$", READY_TIMEOUT)
    assert str(inside) in open(f"/proc/{process.pid}/maps").read()
    assert not inside.exists()

    traced = procs.start_tool(tool, ["--json", "-p", process.pid, f"{name}:naming_lib_op"])
    os.kill(process.pid, signal.SIGUSR1)
    assert process.wait(60) == 0, process.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["naming_lib_op"]
    assert record["count"] == json.loads(truth_path.read_text())["calls"] == 300
    assert record["lost"] == 0
    assert record["binary"] == str(inside)

"""With -p, a function of a library the process loads only later (dlopen)
is traced from the moment it is loaded. Named by path (or by a name the
loader can find), probes attach to the file up front and fire once the
process maps it; named by a name nobody can resolve yet, the tool waits for
the process to map a file of that name and attaches then, when asked to
(--wait-for-library); else that name is an error."""

import json
import os
import shutil
import signal

import pytest

from conftest import EXIT_TIMEOUT, TOOL_ATTACH_TIMEOUT, build_dir, totals_by_symbol

pytestmark = pytest.mark.bpf


def private_plugin(tmp_path):
    """A copy of libnaming.so in a folder of the test's own: the loader has
    never heard of it."""
    library = build_dir() / "tests" / "programs" / "naming" / "libnaming.so"
    if not library.is_file():
        pytest.fail(f"{library} is not built; build the naming-programs target")
    private = tmp_path / "plugins" / "libplugin.so"
    private.parent.mkdir()
    shutil.copy(library, private)
    return private


def spawn_dlopener(procs, private, truth, calls=500, pause=False):
    work = procs.spawn([build_dir() / "tests" / "programs" / "dlopener", private,
                        "naming_lib_op", str(calls), truth,
                        *(["--pause-after-load"] if pause else [])])
    work.wait_for_line("stdout", r"^ready pid=\d+", 10)
    assert str(private) not in open(f"/proc/{work.pid}/maps").read()  # not loaded yet
    return work


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_library_loaded_after_attach_is_traced(procs, tool, tmp_path, mode):
    private = private_plugin(tmp_path)
    truth = tmp_path / "truth.json"
    work = spawn_dlopener(procs, private, truth)
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", work.pid,
                                     f"{private}:naming_lib_op"])
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["naming_lib_op"]
    assert record["count"] == json.loads(truth.read_text())["calls"] == 500
    assert record["lost"] == 0
    assert record["binary"] == str(private)


def start_waiting_tool(procs, tool, args):
    traced = procs.spawn([tool, "--wait-for-library", *args])
    traced.wait_for_line("stderr", r"^Waiting for process \d+ to load the library of plugin:",
                         TOOL_ATTACH_TIMEOUT)
    return traced


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_library_no_one_can_find_is_attached_once_loaded(procs, tool, tmp_path, mode):
    private = private_plugin(tmp_path)
    truth = tmp_path / "truth.json"
    work = spawn_dlopener(procs, private, truth, calls=300, pause=True)
    # "plugin": not mapped by the process, not on PATH, not in the loader cache.
    traced = start_waiting_tool(procs, tool, ["--json", "--mode", mode, "-p", work.pid,
                                              "plugin:naming_lib_*"])
    os.kill(work.pid, signal.SIGUSR1)
    work.wait_for_line("stdout", r"^loaded$", 10)
    traced.wait_for_line("stderr", rf"loaded {private}: tracing 2 functions for "
                         r"\"naming_lib_op\" and 1 more", TOOL_ATTACH_TIMEOUT)
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    totals = totals_by_symbol(traced.text("stdout"))
    record = totals["naming_lib_op"]
    assert record["count"] == json.loads(truth.read_text())["calls"] == 300
    assert record["lost"] == 0
    assert record["mode"] == mode
    assert record["binary"] == str(private)
    assert totals["naming_lib_unused"]["count"] == 0
    assert "never loaded" not in traced.text("stderr")


def test_late_library_with_no_room_left_says_what_is_left_out(procs, tool, tmp_path):
    private = private_plugin(tmp_path)
    truth = tmp_path / "truth.json"
    work = spawn_dlopener(procs, private, truth, calls=100, pause=True)
    traced = start_waiting_tool(procs, tool, ["--json", "--late-functions", "1", "-p", work.pid,
                                              "plugin:naming_lib_*"])
    os.kill(work.pid, signal.SIGUSR1)
    traced.wait_for_line("stderr", r"1 of \S+ 2 matching functions are left out: no room",
                         TOOL_ATTACH_TIMEOUT)
    traced.wait_for_line("stderr", r"tracing 1 function for", TOOL_ATTACH_TIMEOUT)
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    totals = totals_by_symbol(traced.text("stdout"))
    assert list(totals) == ["naming_lib_op"]  # the first by address
    assert totals["naming_lib_op"]["count"] == 100


def test_library_never_loaded_is_named_at_exit(procs, tool, tmp_path):
    private = private_plugin(tmp_path)
    work = spawn_dlopener(procs, private, tmp_path / "truth.json")
    traced = start_waiting_tool(procs, tool, ["--json", "-d", "1", "-p", work.pid,
                                              "plugin:naming_lib_op"])
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    assert (f"process {work.pid} never loaded the library of plugin:naming_lib_op"
            in traced.text("stderr")), traced.describe()
    assert totals_by_symbol(traced.text("stdout")) == {}


def test_unknown_library_is_an_error_that_names_the_flag(procs, tool, tmp_path):
    private = private_plugin(tmp_path)
    work = spawn_dlopener(procs, private, tmp_path / "truth.json")
    result = procs.spawn([tool, "-p", work.pid, "plugin:naming_lib_op"])
    assert result.wait(EXIT_TIMEOUT) == 2, result.describe()
    stderr = result.text("stderr")
    assert "plugin" in stderr and "--wait-for-library" in stderr, stderr
    assert len(result.lines("stderr")) == 1, stderr
    # Without -p there is no process to wait for.
    result = procs.spawn([tool, "--wait-for-library", f"{private}:naming_lib_op"])
    assert result.wait(EXIT_TIMEOUT) == 2, result.describe()
    assert "-p" in result.text("stderr")

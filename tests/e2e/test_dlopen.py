"""With -p, a function of a library the process loads only later (dlopen)
is traced from the moment it is loaded: probes attach to the file, so they
fire once the process maps it."""

import json
import os
import shutil
import signal

import pytest

from conftest import EXIT_TIMEOUT, build_dir, totals_by_symbol

pytestmark = pytest.mark.bpf


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_library_loaded_after_attach_is_traced(procs, tool, tmp_path, mode):
    library = build_dir() / "tests" / "programs" / "naming" / "libnaming.so"
    if not library.is_file():
        pytest.fail(f"{library} is not built; build the naming-programs target")
    # A copy in a folder of the test's own: the loader has never heard of it.
    private = tmp_path / "plugins" / "libplugin.so"
    private.parent.mkdir()
    shutil.copy(library, private)
    truth = tmp_path / "truth.json"
    work = procs.spawn([build_dir() / "tests" / "programs" / "dlopener", private,
                        "naming_lib_op", "500", truth])
    work.wait_for_line("stdout", r"^ready pid=\d+", 10)
    maps = open(f"/proc/{work.pid}/maps").read()
    assert str(private) not in maps  # not loaded yet

    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", work.pid,
                                     f"{private}:naming_lib_op"])
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["naming_lib_op"]
    assert record["count"] == json.loads(truth.read_text())["calls"] == 500
    assert record["lost"] == 0
    assert record["binary"] == str(private)

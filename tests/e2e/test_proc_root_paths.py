"""Paths through /proc/PID/root into a real podman container, wherever a path
goes: a TARGET's binary (with and without -p), `-l`, and a library that exists
only inside the container, reached through an absolute symlink that means
something only there (/usr/lib/libplugin.so -> /usr/lib/x/libplugin.so.1).
realpath() of such a path answers with a path in our own root, where the file
is not; the tool must keep the /proc/PID/root prefix and resolve the rest
inside it. Every call is counted against the container's own ground truth;
the report names a binary given as a path by that path, one given as a name
by the path the process knows."""

import json
import os
import signal
import time

import pytest

from conftest import EXIT_TIMEOUT, Truth, build_dir, record_problems, run_tool, totals_by_symbol
from containers import container_images, containers  # noqa: F401 (fixtures)

pytestmark = pytest.mark.bpf

CALLS = 200
LIBRARY_CALLS = 300
READY = r"^ready pid=1$"


@pytest.fixture
def app_image(container_images, target_app):
    return container_images.build("target-app", "v1", {"/app/target-app": target_app})


@pytest.fixture
def plugin_image(container_images):
    """dlopener and libnaming.so, the library only the container has, behind
    an absolute symlink."""
    library = build_dir() / "tests" / "programs" / "naming" / "libnaming.so"
    dlopener = build_dir() / "tests" / "programs" / "dlopener"
    for path in (library, dlopener):
        if not path.is_file():
            pytest.fail(f"{path} is not built; build the naming-programs and dlopener targets")
    return container_images.build(
        "plugin", "v1", {"/app/dlopener": dlopener, "/usr/lib/x/libplugin.so.1": library},
        links={"/usr/lib/libplugin.so": "/usr/lib/x/libplugin.so.1"})


def start_app(containers, image, tmp_path, args):
    """target-app in a container, waiting for SIGUSR1; its truth goes to
    tmp_path/truth.json."""
    box = containers.run(image, ["/app/target-app", "--wait-signal", "--truth",
                                 "/out/truth.json", "--seed", "3", *args],
                         volumes={tmp_path: "/out"})
    box.wait_for_log(READY)
    return box


def finish_tool(traced, with_pid):
    """The tool's total records once it is done: with -p it exits with the
    process; else it is stopped."""
    code = traced.wait(EXIT_TIMEOUT) if with_pid else traced.stop()
    assert code == 0, traced.describe()
    return totals_by_symbol(traced.text("stdout"))


@pytest.mark.parametrize("mode", ["events", "kernel"])
@pytest.mark.parametrize("with_pid", [False, True], ids=["system-wide", "-p"])
def test_binary_through_proc_root(procs, tool, app_image, containers, tmp_path, mode, with_pid):
    box = start_app(containers, app_image, tmp_path, ["--calls", CALLS])
    binary = f"/proc/{box.pid}/root/app/target-app"
    # Not there in our root: realpath() of the path would name a missing file.
    assert not os.path.exists("/app/target-app")
    pid_args = ["-p", box.pid] if with_pid else []
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-d", "120", *pid_args,
                                     f"{binary}:slow_op"])
    box.signal(signal.SIGUSR1)  # start
    assert box.wait() == 0, box.logs()
    truth = Truth(json.loads((tmp_path / "truth.json").read_text()))
    record = finish_tool(traced, with_pid)["slow_op"]
    assert record["count"] == truth.function("slow_op")["calls"] == CALLS, record
    assert record_problems(record, truth.function("slow_op")) == []
    assert record["mode"] == mode
    assert record["binary"] == binary


def test_binary_through_proc_root_until_stopped(procs, tool, app_image, containers, tmp_path):
    """target-app runs until `podman stop`; the truth it writes then matches."""
    box = start_app(containers, app_image, tmp_path, ["--rate", "300"])
    binary = f"/proc/{box.pid}/root/app/target-app"
    traced = procs.start_tool(tool, ["--json", "-p", box.pid, f"{binary}:slow_op"])
    box.signal(signal.SIGUSR1)
    time.sleep(1.0)
    assert box.stop() == 0  # SIGTERM: target-app finishes its call and writes its truth
    truth = Truth(json.loads((tmp_path / "truth.json").read_text()))
    record = finish_tool(traced, True)["slow_op"]
    assert truth.function("slow_op")["calls"] > 0
    assert record["count"] == truth.function("slow_op")["calls"], record
    assert record["binary"] == binary


def test_list_through_proc_root(tool, app_image, containers, tmp_path):
    box = start_app(containers, app_image, tmp_path, [])
    binary = f"/proc/{box.pid}/root/app/target-app"
    for pid_args in ([], ["-p", box.pid]):
        result = run_tool(tool, ["-l", *pid_args, f"{binary}:*_op"])
        assert result.returncode == 0, result.stderr
        listed = result.stdout
        for name in ("slow_op", "fast_op", "cet_op"):
            assert name in listed, listed
        assert binary in listed, listed


@pytest.mark.parametrize("form", ["path system-wide", "path -p", "name -p"])
def test_library_only_the_container_has(procs, tool, plugin_image, containers, tmp_path, form):
    box = containers.run(plugin_image, ["/app/dlopener", "/usr/lib/libplugin.so",
                                        "naming_lib_op", LIBRARY_CALLS, "/out/truth.json"],
                         volumes={tmp_path: "/out"})
    box.wait_for_log(READY)
    assert not os.path.exists("/usr/lib/x/libplugin.so.1")
    # The library is not loaded yet: probes go on the file, found before dlopen().
    path = f"/proc/{box.pid}/root/usr/lib/libplugin.so"
    with_pid = form.endswith("-p")
    target = "libplugin.so" if form.startswith("name") else path
    pid_args = ["-p", box.pid] if with_pid else []
    traced = procs.start_tool(tool, ["--json", "-d", "120", *pid_args,
                                     f"{target}:naming_lib_op"])
    box.signal(signal.SIGUSR1)
    assert box.wait() == 0, box.logs()
    record = finish_tool(traced, with_pid)["naming_lib_op"]
    assert record["count"] == json.loads((tmp_path / "truth.json").read_text())["calls"]
    assert record["count"] == LIBRARY_CALLS
    assert record["lost"] == 0
    # A path is shown as given; a name as the file the process knows.
    assert record["binary"] == (path if target == path else "/usr/lib/x/libplugin.so.1")

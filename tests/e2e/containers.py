"""Real podman containers for the end-to-end tests.

Why: funclatency traces programs in containers (paths through /proc/PID/root,
probes that fire in every container of an image, container ids by cgroup),
and only real containers show what the kernel, podman and runc really do. No
registry is reachable here, so an image is a folder made on the spot (the
files a test names plus every library `ldd` names for them, and the dynamic
loader) imported with `podman import`. Containers run with runc and the
limits this machine allows (../shared/DESIGN.md, "Containers on this
machine").

Use: import the fixtures into a test module (pytest finds them there):

    from containers import container_images, containers  # noqa: F401 (fixtures)

    def test_x(container_images, containers, target_app, tmp_path):
        image = container_images.build("app", "v1", {"/app/target-app": target_app})
        box = containers.run(image, ["/app/target-app", "--truth", "/out/truth.json"],
                             volumes={tmp_path: "/out"})
        box.wait_for_log(r"^ready pid=1$")
        print(box.id, box.pid, f"/proc/{box.pid}/root/app/target-app")
        box.signal(signal.SIGUSR1)     # from the host, to its PID 1
        assert box.stop() == 0          # SIGTERM: target-app writes its truth
        box.start()                     # the same container again: a new box.pid

Images are built once per session (the same name, tag and files give the same
image) and removed at its end; each image's files are its own (probes on
v1's binary fire in v1's containers, not v2's, even for the same bytes).
Containers are removed when their test ends, passed or failed. Every name
carries a prefix unique to this pytest run, so runs in parallel never collide.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

PODMAN_TIMEOUT = 120.0  # seconds for one podman command
# podman's default limits are refused here; crun refuses these cgroups.
RUN_OPTIONS = ["--runtime", "runc", "--ulimit", "nofile=1024:1024",
               "--ulimit", "nproc=1024:1024"]
_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")


def podman_unavailable_reason():
    """None when rootful podman with runc can run containers here, else why not."""
    if os.geteuid() != 0:
        return "needs root (rootful podman)"
    for program in ("podman", "runc"):
        if shutil.which(program) is None:
            return f"{program} is not installed (scripts/setup installs it)"
    return None


def podman(*args, timeout=PODMAN_TIMEOUT, check=True) -> str:
    """Runs `podman ARGS`; returns its stdout stripped. Fails the test with
    podman's stderr when it fails and `check` is set."""
    result = subprocess.run(["podman", *map(str, args)], stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        pytest.fail(f"podman {' '.join(map(str, args))} failed ({result.returncode}): "
                    f"{result.stderr.strip()}")
    return result.stdout.strip()


def libraries_of(binary: Path) -> list:
    """Absolute paths of every library `ldd` names for `binary`, the dynamic
    loader included; [] for a static binary or a file that is no ELF."""
    result = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    if result.returncode != 0:
        return []
    return [match.group(1) for match in map(_LDD_LINE.search, result.stdout.splitlines())
            if match]


def make_rootfs(directory: Path, files: dict, links: dict = None):
    """Fills `directory` as a container's root: each {path inside: host file}
    of `files` (copied, symlinks followed), every library ldd names for them
    at its host path, and each {path inside: target} of `links` as a symlink."""
    wanted = {str(inside): Path(host) for inside, host in files.items()}
    for host in list(wanted.values()):
        for library in libraries_of(host):
            wanted.setdefault(library, Path(library))
    for inside, host in wanted.items():
        destination = directory / inside.lstrip("/")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(host, destination)
    for inside, target in (links or {}).items():
        destination = directory / inside.lstrip("/")
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.symlink_to(target)


class Container:
    """One container started by Containers.run()."""

    def __init__(self, container_id: str, name: str):
        self.id = container_id  # 64 hex digits
        self.name = name
        self.pid = self._main_pid()  # host PID of its main process; 0 when stopped

    def _main_pid(self) -> int:
        return int(podman("inspect", "--format", "{{.State.Pid}}", self.id))

    @property
    def root(self) -> str:
        """/proc/PID/root of the main process: the container's files, from the host."""
        return f"/proc/{self.pid}/root"

    def logs(self) -> str:
        """What the container wrote to stdout and stderr so far."""
        return podman("logs", self.id, check=False)

    def wait_for_log(self, pattern, timeout=30.0) -> str:
        """The first log line matching regex `pattern`; fails the test when the
        container exits or `timeout` passes first."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            logs = self.logs()
            for line in logs.splitlines():
                if regex.search(line):
                    return line
            if not self.running():
                pytest.fail(f"container {self.name} exited before logging /{pattern}/:\n{logs}")
            if time.monotonic() > deadline:
                pytest.fail(f"container {self.name} logged no /{pattern}/ in {timeout}s:\n{logs}")
            time.sleep(0.05)

    def running(self) -> bool:
        return podman("inspect", "--format", "{{.State.Running}}", self.id, check=False) == "true"

    def signal(self, signum):
        """Sends `signum` to the main process (from the host: a blocked or
        handled signal reaches a container's PID 1)."""
        os.kill(self.pid, signum)

    def stop(self, timeout=10) -> int:
        """SIGTERM, then SIGKILL after `timeout` seconds; returns the exit code."""
        podman("stop", "--time", timeout, self.id)
        return self.wait()

    def start(self):
        """Starts a stopped container again: a new main process, a new pid."""
        podman("start", self.id)
        self.pid = self._main_pid()

    def wait(self, timeout=PODMAN_TIMEOUT) -> int:
        """Waits for the container to exit; returns its exit code."""
        code = int(podman("wait", self.id, timeout=timeout))
        self.pid = 0
        return code

    def rm(self):
        """Removes the container, killing it first if it runs."""
        podman("rm", "--force", "--time", 0, self.id, check=False)
        self.pid = 0


class ContainerImages:
    """Images imported for one pytest session; removed at its end."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self._built = {}  # reference -> (files, links) it was built from

    def build(self, name: str, tag: str, files: dict, links: dict = None) -> str:
        """localhost/<prefix>-<name>:<tag>, an image holding `files` ({path
        inside: host file}), their libraries and `links` ({path inside:
        symlink target}) (see make_rootfs). Built once per session: the same
        call again returns the same image. Each image has files of its own
        (other inodes), even where another image holds the same bytes: probes
        on one image's binary fire in that image's containers only."""
        reference = f"localhost/{self.prefix}-{name}:{tag}"
        recipe = ({str(k): str(v) for k, v in files.items()}, dict(links or {}))
        if reference in self._built:
            if self._built[reference] != recipe:
                pytest.fail(f"{reference} was built from other files: {self._built[reference]}")
            return reference
        with tempfile.TemporaryDirectory(prefix=f"{self.prefix}-") as scratch:
            rootfs = Path(scratch) / "rootfs"
            rootfs.mkdir()
            make_rootfs(rootfs, files, links)
            # podman shares a layer between imports of identical archives: the
            # image's own name makes its archive, and so its files, its own.
            (rootfs / "etc").mkdir(exist_ok=True)
            (rootfs / "etc" / "funclatency-test-image").write_text(reference + "\n")
            archive = Path(scratch) / "rootfs.tar"
            subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True)
            podman("import", archive, reference)
        self._built[reference] = recipe
        return reference

    def remove_all(self):
        if self._built:
            podman("rmi", "--force", *self._built, check=False)
        self._built.clear()


class Containers:
    """Containers started for one test; every one is removed when it ends."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.started = []

    def run(self, image: str, args, volumes: dict = None, name: str = None,
            options=()) -> Container:
        """`podman run -d` of `image` with command `args`; `volumes` maps host
        folders to paths inside ({tmp_path: "/out"}), `options` are more podman
        run options. Returns once podman says the container runs."""
        name = f"{self.prefix}-{name or 'c'}-{len(self.started)}"
        mounts = [f"--volume={Path(host).resolve()}:{inside}"
                  for host, inside in (volumes or {}).items()]
        container_id = podman("run", "--detach", *RUN_OPTIONS, "--name", name, *mounts,
                              *options, image, *map(str, args))
        if not re.fullmatch(r"[0-9a-f]{64}", container_id):
            pytest.fail(f"podman run printed no container id: {container_id!r}")
        container = Container(container_id, name)
        self.started.append(container)
        return container

    def remove_all(self):
        if self.started:
            podman("rm", "--force", "--time", 0, *(c.id for c in self.started), check=False)
        self.started.clear()


def _require_podman():
    reason = podman_unavailable_reason()
    if reason is None:
        return
    if os.environ.get("FUNCLATENCY_REQUIRE_BPF") == "1":
        pytest.fail(f"containers are required (FUNCLATENCY_REQUIRE_BPF=1): {reason}")
    pytest.skip(f"no containers: {reason}")


# Unique to this pytest run: every image and container name starts with it.
RUN_PREFIX = f"fl-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def container_images(request) -> ContainerImages:
    """Images for the whole session, removed at its end."""
    _require_podman()
    images = ContainerImages(RUN_PREFIX)
    request.addfinalizer(images.remove_all)
    return images


@pytest.fixture
def containers(container_images, request) -> Containers:
    """Containers for one test, removed at its end (before the images: this
    fixture depends on container_images)."""
    started = Containers(f"{RUN_PREFIX}-{uuid.uuid4().hex[:6]}")
    request.addfinalizer(started.remove_all)
    return started

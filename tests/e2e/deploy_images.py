"""The images the deployment test runs, built on this machine with `podman
build` as a user builds them: deploy/kubernetes/Dockerfile over the package
`cpack` makes, and Debian's nginx, both on a Debian 12 base image.

Why here: no image registry is reachable on this machine or in CI, so the
base image (what `FROM debian:12-slim` names) is made from Debian's mirror,
which is: `debootstrap --variant=minbase bookworm`, trimmed as Debian's slim
image is (no documentation, man pages or locales; apt lists removed), then
`podman import`. debootstrap takes minutes, so the base image and its tar
archive are kept across runs, keyed by a hash of the recipe below
(FUNCLATENCY_IMAGE_CACHE, default /var/cache/funclatency-test); runs in
parallel take a file lock to build it once. The Dockerfile is built
unchanged: `podman build --from BASE` stands the base image in for its
first FROM, so no image of the real name debian:12-slim is shadowed.

Podman runs with runc and the limits this machine allows, set once in a
containers.conf of the test's own (named by CONTAINERS_CONF) for every podman
command: the builds' RUN steps, the pods' infra containers, the containers.
"""

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

CACHE = Path(os.environ.get("FUNCLATENCY_IMAGE_CACHE", "/var/cache/funclatency-test"))
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_TIMEOUT = 900  # seconds; ~100 s here from deb.debian.org
BUILD_TIMEOUT = 600  # one `podman build` (apt-get update and install in it)

# The containers.conf every podman command of the deployment test reads:
# podman's default limits are refused here, crun refuses these cgroups.
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
"""

# What Debian's slim images add to a minbase tree: dpkg leaves documentation,
# man pages and translations out of every later install too.
DPKG_SLIM = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
"""
APT_NO_LANGUAGES = 'Acquire::Languages "none";\n'
# And apt keeps neither the packages it installed nor its binary caches of
# the lists (tens of MB in every layer that runs apt-get).
APT_CLEAN = """\
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
"""
# The three suites Debian's own image uses: security fixes reach the images.
SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: {SUITE} {SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: {SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
TRIMMED = ("usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale",
           "usr/share/groff", "usr/share/lintian")

# Debian's nginx as Debian ships it (stripped, its default site on port 80).
NGINX_CONTAINERFILE = """\
FROM {base}
RUN apt-get update \\
 && apt-get install -y --no-install-recommends nginx-light \\
 && rm -rf /var/lib/apt/lists/*
CMD ["/usr/sbin/nginx", "-g", "daemon off;"]
"""


def podman_env(folder: Path) -> dict:
    """The environment for podman: CONTAINERS_CONF names the test's config."""
    conf = folder / "containers.conf"
    if not conf.is_file():
        conf.write_text(CONTAINERS_CONF)
    return dict(os.environ, CONTAINERS_CONF=str(conf))


def run(args, env, timeout=120, cwd=None, input=None) -> str:
    """Runs a command; fails the test with its output when it fails."""
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env,
                            timeout=timeout, cwd=cwd, input=input,
                            stdin=None if input is not None else subprocess.DEVNULL)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, args))} failed ({result.returncode}):\n"
                    f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout.strip()


def image_exists(reference: str, env) -> bool:
    return subprocess.run(["podman", "image", "exists", reference], env=env,
                          stdin=subprocess.DEVNULL).returncode == 0


def image_size(reference: str, env) -> int:
    return int(run(["podman", "image", "inspect", "--format", "{{.Size}}", reference], env))


def _key(*parts) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _debootstrap_archive(env) -> Path:
    """The tar archive of `debootstrap --variant=minbase`, made once."""
    archive = CACHE / f"debootstrap-{SUITE}-minbase-{_key(SUITE, MIRROR)}.tar"
    if archive.is_file():
        return archive
    rootfs = CACHE / f"{archive.stem}.rootfs"
    shutil.rmtree(rootfs, ignore_errors=True)
    started = time.monotonic()
    run(["debootstrap", "--variant=minbase", SUITE, rootfs, MIRROR], env,
        timeout=DEBOOTSTRAP_TIMEOUT)
    print(f"debootstrap --variant=minbase {SUITE}: {time.monotonic() - started:.0f} s")
    partial = archive.with_suffix(".partial")
    run(["tar", "-C", rootfs, "--numeric-owner", "-cf", partial, "."], env, timeout=300)
    partial.rename(archive)
    shutil.rmtree(rootfs, ignore_errors=True)
    return archive


def _slim(rootfs: Path):
    """What makes a minbase tree a slim image."""
    (rootfs / "etc/dpkg/dpkg.cfg.d/slim").write_text(DPKG_SLIM)
    (rootfs / "etc/apt/apt.conf.d/no-languages").write_text(APT_NO_LANGUAGES)
    (rootfs / "etc/apt/apt.conf.d/clean").write_text(APT_CLEAN)
    (rootfs / "etc/apt/sources.list").unlink(missing_ok=True)
    (rootfs / "etc/apt/sources.list.d/debian.sources").write_text(SOURCES)
    for folder in TRIMMED:
        path = rootfs / folder
        if folder == "usr/share/doc":
            for entry in path.glob("*/*"):
                if entry.name != "copyright":
                    shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() \
                        else entry.unlink()
            continue
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
    for pattern in ("var/lib/apt/lists/*", "var/cache/apt/*.bin", "var/cache/apt/archives/*.deb",
                    "var/log/*.log", "var/log/apt/*"):
        for entry in rootfs.glob(pattern):
            if entry.is_file():
                entry.unlink()


def base_image(env) -> str:
    """The Debian 12 base image's reference, made once and kept (see above)."""
    if shutil.which("debootstrap") is None:
        pytest.fail("debootstrap is not installed (scripts/setup deploy installs it)")
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        raw = _debootstrap_archive(env)
        key = _key(raw.name, DPKG_SLIM, APT_NO_LANGUAGES, APT_CLEAN, SOURCES, *TRIMMED)
        reference = f"localhost/funclatency-test-base:{SUITE}-{key}"
        if image_exists(reference, env):
            return reference
        rootfs = CACHE / f"base-{key}.rootfs"
        shutil.rmtree(rootfs, ignore_errors=True)
        rootfs.mkdir()
        try:
            run(["tar", "-C", rootfs, "--numeric-owner", "-xf", raw], env, timeout=300)
            _slim(rootfs)
            archive = CACHE / f"base-{key}.tar"
            run(["tar", "-C", rootfs, "--numeric-owner", "-cf", archive, "."], env, timeout=300)
            run(["podman", "import", "--change", 'CMD ["bash"]', archive, reference], env,
                timeout=300)
            archive.unlink()
        finally:
            shutil.rmtree(rootfs, ignore_errors=True)
        return reference


def nginx_image(base: str, env, scratch: Path) -> str:
    """An image of Debian's nginx-light over `base`, kept across runs (keyed
    by the base and the Containerfile)."""
    containerfile = NGINX_CONTAINERFILE.format(base=base)
    key = hashlib.sha256(containerfile.encode()).hexdigest()[:16]
    reference = f"localhost/funclatency-test-nginx:{key}"
    with open(CACHE / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not image_exists(reference, env):
            folder = scratch / "nginx-image"
            folder.mkdir()
            (folder / "Containerfile").write_text(containerfile)
            run(["podman", "build", "--quiet", "-t", reference, folder], env,
                timeout=BUILD_TIMEOUT)
    return reference


def funclatency_image(deb: Path, base: str, reference: str, dockerfile: Path, env,
                      scratch: Path) -> str:
    """deploy/kubernetes/Dockerfile built as its comment says, from a folder
    holding the package, with `base` standing in for its FROM."""
    folder = scratch / "funclatency-image"
    folder.mkdir()
    shutil.copy(deb, folder)
    shutil.copy(dockerfile, folder / "Dockerfile")
    started = time.monotonic()
    run(["podman", "build", "--quiet", "--from", base, "-t", reference, folder], env,
        timeout=BUILD_TIMEOUT)
    print(f"podman build {reference}: {time.monotonic() - started:.0f} s, "
          f"{image_size(reference, env) / 1e6:.0f} MB")
    return reference

"""The Debian package, as an operator gets it: packed by CPack from the test's
build directory (no second build), installed with apt-get on this machine,
run from /usr/bin with both exporter modules and the report/diff module
found in /usr/lib/funclatency, as an agent (--follow and --config, counts
exact against the traced program's own), with --calibrate and
--subtract-overhead (the stripped binary probes its own code), its man page
and systemd unit checked where they land, and removed again with nothing of
it left behind.

This installs to the real system (root only). The package is removed at the
end whatever happens (the module fixture's finalizer), so the other tests,
which run the build tree's binary, never see it. A funclatency package that
was installed before the test is not touched: the test fails and says so.
The sanitizer build (FUNCLATENCY_SANITIZE) is not packed: that run skips."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from agent_runs import (agent_config, agent_counts_match_truth, assert_calibrates,
                        assert_subtracts_overhead)
from conftest import build_dir, built, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "funclatency"
INSTALLED_TOOL = Path("/usr/bin/funclatency")
MODULE_DIR = Path("/usr/lib/funclatency")
UNIT = Path("/usr/lib/systemd/system/funclatency.service")
CPACK_TIMEOUT = 180  # install + strip + dpkg-shlibdeps + xz of an up-to-date build
APT_TIMEOUT = 300  # includes waiting for another apt-get to let go of the lock
APT = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=240"]
APT_ENV = dict(os.environ, DEBIAN_FRONTEND="noninteractive")

# The exporter modules' libraries: Recommends, never Depends.
HEAVY_LIBRARIES = ("libgrpc", "libprotobuf", "libcurl", "libcpp-httplib", "libssl",
                   "libyaml-cpp")


def run(args, timeout=60, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, **kwargs)


def package_installed() -> bool:
    status = run(["dpkg-query", "-W", "-f=${Status}", PACKAGE])
    return status.returncode == 0 and "install ok installed" in status.stdout


def package_present() -> bool:
    """Installed, or any state dpkg keeps files or records of (half-installed,
    config-files, ...) after an interrupted run."""
    status = run(["dpkg-query", "-W", "-f=${db:Status-Status}", PACKAGE])
    return status.returncode == 0 and status.stdout.strip() not in ("", "not-installed")


def project_version() -> str:
    cmake = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(funclatency VERSION ([0-9.]+)", cmake).group(1)


def sanitized_build() -> bool:
    cache = build_dir() / "CMakeCache.txt"
    return cache.is_file() and re.search(r"^FUNCLATENCY_SANITIZE:BOOL=ON$", cache.read_text(),
                                         re.MULTILINE) is not None


def remove_package():
    return run([*APT, "remove", PACKAGE], timeout=APT_TIMEOUT, env=APT_ENV)


@pytest.fixture(scope="module")
def deb(tmp_path_factory):
    """The .deb CPack makes from the build directory."""
    if os.geteuid() != 0:
        pytest.skip("installs a package: needs root")
    if sanitized_build():
        pytest.skip("the package is tested with the regular build, not the sanitizer build")
    for program in ("cpack", "apt-get", "dpkg-shlibdeps"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} is not installed (scripts/setup installs it)")
    config = build_dir() / "CPackConfig.cmake"
    if not config.is_file():
        pytest.fail(f"{config} is missing: configure the build with the top-level CMakeLists.txt")
    out = tmp_path_factory.mktemp("package")
    started = time.monotonic()
    packed = run(["cpack", "--config", config, "-G", "DEB", "-B", out], timeout=CPACK_TIMEOUT)
    assert packed.returncode == 0, f"cpack failed:\n{packed.stdout}\n{packed.stderr}"
    debs = sorted(out.glob(f"{PACKAGE}_*.deb"))
    assert len(debs) == 1, f"want one {PACKAGE}_*.deb in {out}: {list(out.iterdir())}"
    print(f"packed {debs[0].name} ({debs[0].stat().st_size} bytes) "
          f"in {time.monotonic() - started:.1f} s")
    return debs[0]


@pytest.fixture(scope="module")
def installed(deb):
    """The package, installed by apt-get from the .deb; removed at the end
    whatever the tests did."""
    if package_present():
        pytest.fail(f"a {PACKAGE} package is already on this system; this test installs and "
                    f"removes its own (dpkg --purge {PACKAGE}, then run it again)")
    result = run([*APT, "install", f"./{deb.name}"], cwd=deb.parent, timeout=APT_TIMEOUT,
                 env=APT_ENV)
    try:
        assert result.returncode == 0, f"apt-get install failed:\n{result.stdout}\n{result.stderr}"
        files = run(["dpkg-query", "-L", PACKAGE]).stdout.split()
        yield files
    finally:
        if package_present():
            removed = remove_package()
            if package_present():
                removed = run(["dpkg", "--purge", PACKAGE], timeout=APT_TIMEOUT)
            assert not package_present(), f"could not remove {PACKAGE}: {removed.stderr}"


def control_field(deb: Path, field: str) -> str:
    return run(["dpkg-deb", "-f", deb, field]).stdout.strip()


def test_control_fields(deb):
    assert control_field(deb, "Package") == PACKAGE
    assert control_field(deb, "Version") == project_version()
    depends = control_field(deb, "Depends")
    recommends = control_field(deb, "Recommends")
    print(f"Depends: {depends}\nRecommends: {recommends}\nsize: {deb.stat().st_size}")
    # What the binary links (computed by dpkg-shlibdeps, not listed by hand).
    for library in ("libbpf1", "libelf1", "libc6"):
        assert library in depends, depends
    # The exporters' libraries stay out of the core's Depends.
    heavy = [name for name in HEAVY_LIBRARIES if name in depends]
    assert not heavy, f"Depends names exporter libraries {heavy}: {depends}"
    # The OTLP module's: what --no-install-recommends leaves out.
    for library in ("libgrpc++", "libprotobuf", "libcurl"):
        assert library in recommends, recommends


def test_package_contents(deb):
    listing = run(["dpkg-deb", "-c", deb]).stdout
    paths = {line.split()[-1].removeprefix(".") for line in listing.splitlines()}
    for path in ("/usr/bin/funclatency", "/usr/lib/funclatency/funclatency-otlp.so",
                 "/usr/lib/funclatency/funclatency-prometheus.so",
                 "/usr/lib/funclatency/funclatency-offline.so",
                 "/usr/share/man/man8/funclatency.8.gz",
                 "/usr/share/bash-completion/completions/funclatency",
                 "/usr/lib/systemd/system/funclatency.service"):
        assert path in paths, f"{path} is not in the package:\n{listing}"
    # The DaemonSet's image installs this package and runs its binary.
    dockerfile = (ROOT / "deploy" / "kubernetes" / "Dockerfile").read_text()
    assert re.search(r"apt-get install -y /tmp/funclatency_\*_amd64\.deb", dockerfile)
    entrypoint = re.search(r'^ENTRYPOINT \["([^"]+)"\]', dockerfile, re.MULTILINE).group(1)
    assert entrypoint in paths, entrypoint
    # Nothing in deploy/ names a library the package does not use (the code moved to Zydis).
    for path in (ROOT / "deploy").rglob("*"):
        if path.is_file():
            assert "capstone" not in path.read_text().lower(), f"{path} names libcapstone"
    # Stripped: no debug sections in what is installed.
    binaries = [p for p in paths if p.startswith(("/usr/bin/", "/usr/lib/funclatency/"))
                and not p.endswith("/")]
    out = deb.parent / "contents"
    run(["dpkg-deb", "-x", deb, out])
    for path in binaries:
        sections = run(["readelf", "-S", "-W", out / path.lstrip("/")]).stdout
        assert ".debug_info" not in sections, f"{path} is not stripped"


def test_version_from_usr_bin(installed):
    assert str(INSTALLED_TOOL) in installed
    result = run([INSTALLED_TOOL, "--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"funclatency {project_version()}"), result.stdout


def test_report_and_diff_from_usr_bin(installed, tmp_path):
    """The offline commands run from their module in /usr/lib/funclatency
    (the binary has none of their code): an HTML report and a diff of a run
    with itself."""
    run_file = tmp_path / "run.ndjson"
    run_file.write_text(
        '{"type":"interval","time":"2026-01-01T00:00:00.000000Z","symbol":"f","binary":"/b",'
        '"mode":"events","count":2,"sum_ns":6000,"min_ns":2500,"max_ns":3500,'
        '"log2_buckets":[[2000,3999,2]],"lost":0}\n')
    html = tmp_path / "run.html"
    report = run([INSTALLED_TOOL, "report", run_file, "-o", html])
    assert report.returncode == 0, report.stderr
    assert html.read_text().lstrip().lower().startswith("<!doctype html"), html.read_text()[:200]
    diff = run([INSTALLED_TOOL, "diff", run_file, run_file, "--json"])
    assert diff.returncode == 0, diff.stderr
    assert [f["symbol"] for f in json.loads(diff.stdout)["functions"]] == ["f"], diff.stdout


def test_man_finds_the_page(installed):
    if shutil.which("man") is None:
        pytest.fail("man is not installed (scripts/setup installs man-db)")
    result = run(["man", "-w", PACKAGE])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "/usr/share/man/man8/funclatency.8.gz", result.stdout
    rendered = run(["man", "-P", "cat", "8", PACKAGE], env=dict(os.environ, MANWIDTH="80"))
    assert rendered.returncode == 0 and "--otlp-protocol" in rendered.stdout.replace("‐", "-")


def test_systemd_accepts_the_unit(installed):
    """systemd-analyze verify loads the unit as systemd would (unknown keys,
    bad values, an ExecStart that is not executable) without needing systemd
    to be PID 1; any complaint about the unit fails."""
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze is not installed (scripts/setup installs systemd)")
    unit = UNIT.read_text()
    assert re.search(r"^ExecStart=/usr/bin/funclatency ", unit, re.MULTILINE), unit
    result = run(["systemd-analyze", "verify", UNIT])
    complaints = [line for line in (result.stdout + result.stderr).splitlines()
                  if "funclatency" in line]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr


def start_otlp_receiver(procs):
    """tests/programs/otlp-receiver: (the process, its OTLP/HTTP URL)."""
    program = built(build_dir() / "tests" / "programs" / "otlp-receiver", "otlp-receiver")
    process = procs.spawn([program])
    line = process.wait_for_line("stdout", r'^\{"listening"', 10.0)
    return process, f"http://127.0.0.1:{json.loads(line)['listening']['http']}/v1/metrics"


def exported_metric_names(receiver) -> set:
    names = set()
    for line in receiver.lines("stdout"):
        record = json.loads(line)
        for resource in record.get("request", {}).get("resource_metrics", []):
            for scope in resource.get("scope_metrics", []):
                names.update(m["name"] for m in scope.get("metrics", []))
    return names


@pytest.mark.bpf
def test_traced_run_from_usr_bin_with_both_exporters(installed, procs, target_app):
    receiver, otlp_url = start_otlp_receiver(procs)
    work = procs.start_workload(target_app, ["--calls", "0", "--rate", "200"],
                                wait_signal=False)
    endpoint = f"127.0.0.1:{free_port()}"
    traced = procs.start_tool(INSTALLED_TOOL, [
        "-p", work.pid, f"--otlp={otlp_url}", "--prometheus", endpoint,
        f"{target_app}:slow_op"])

    maps = Path(f"/proc/{traced.pid}/maps").read_text()
    for module in ("funclatency-otlp.so", "funclatency-prometheus.so"):
        assert f"{MODULE_DIR}/{module}" in maps, f"{module} not loaded from {MODULE_DIR}"

    def scraped_calls():
        with urllib.request.urlopen(f"http://{endpoint}/metrics", timeout=5) as response:
            text = response.read().decode()
        match = re.search(r'^ebpf_function_latency_ms_count\{symbol="slow_op".*\} (\d+)$', text,
                          re.MULTILINE)
        return int(match.group(1)) if match else 0

    assert wait_until(lambda: scraped_calls() > 0, 10.0, interval=0.25), traced.describe()
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    # The final flush at exit reaches the receiver before the tool exits.
    assert wait_until(lambda: "function_latency_ms" in exported_metric_names(receiver), 10.0), \
        receiver.describe()


@pytest.mark.bpf
def test_agent_from_usr_bin_follows_a_program(installed, procs, private_app):
    """The shipped agent starts (it calibrates on its own, stripped, code)
    and counts every call of a program it follows, stopped as the kubelet
    stops it (SIGTERM)."""
    agent_counts_match_truth(procs, INSTALLED_TOOL, private_app,
                             ["--follow", f"{private_app}:slow_op", f"{private_app}:fast_op"])


@pytest.mark.bpf
def test_agent_from_usr_bin_with_a_config_file(installed, procs, private_app, tmp_path):
    config = agent_config(tmp_path / "agent.yaml", private_app)
    agent_counts_match_truth(procs, INSTALLED_TOOL, private_app, ["--config", config])


@pytest.mark.bpf
def test_calibrate_from_usr_bin(installed):
    assert_calibrates(INSTALLED_TOOL)


@pytest.mark.bpf
def test_subtract_overhead_from_usr_bin(installed, procs, private_app):
    assert_subtracts_overhead(procs, INSTALLED_TOOL, private_app)


def test_remove_leaves_no_file_behind(installed):
    """Runs last in this file: apt-get remove, then nothing the package
    installed is left (directories shared with other packages aside)."""
    result = remove_package()
    assert result.returncode == 0, f"apt-get remove failed:\n{result.stdout}\n{result.stderr}"
    assert not package_installed()
    left = []
    for name in installed:
        path = Path(name)
        if path.is_symlink() or path.is_file():
            left.append(name)
        elif path.is_dir() and name.startswith(("/usr/lib/funclatency", "/usr/share/doc/funclatency")):
            left.append(name)
    assert not left, f"left behind after apt-get remove: {left}"
    # Not even a config file: the package ships none, so remove is a purge.
    status = run(["dpkg-query", "-W", "-f=${Status}", PACKAGE]).stdout
    assert "config-files" not in status, status

"""Least privilege after attach: once the "Tracing" line is out, every
thread of funclatency has no capability (CapEff and CapPrm 0 in
/proc/PID/task/*/status) and, with --user, runs as that user, while console
or JSON output, the Prometheus endpoint and the OTLP export go on and auto
mode still switches. With --wait-for-library, a library loaded later is
still attached (what that needs stays permitted, effective only while
attaching). A --user that does not exist is refused before anything attaches."""

import json
import os
import pwd
import re
import signal
import time
import urllib.request

import pytest

from conftest import (EXIT_TIMEOUT, TOOL_ATTACH_TIMEOUT, assert_breakpoint_present,
                      assert_nothing_attached, assert_refused, build_dir, free_port,
                      parse_json_records, run_tool, totals_by_symbol, wait_until)
from test_dlopen import private_plugin, spawn_dlopener, start_waiting_tool
from test_otlp import receiver_program, start_receiver  # noqa: F401 (a fixture)

pytestmark = pytest.mark.bpf

NOBODY = pwd.getpwnam("nobody")
CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH = 19, 2


def thread_status(pid):
    """{tid: {"CapEff": int, "CapPrm": int, "Uid": [..]}} for every thread."""
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        fields = {}
        try:
            text = open(f"/proc/{pid}/task/{tid}/status").read()
        except (FileNotFoundError, ProcessLookupError):
            # A thread that ended since the listing: ENOENT, or ESRCH when
            # it ended between the open and the read (seen in CI).
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.split()
        threads[int(tid)] = {"CapEff": int(fields["CapEff"][0], 16),
                             "CapPrm": int(fields["CapPrm"][0], 16),
                             "CapAmb": int(fields["CapAmb"][0], 16),
                             "Uid": [int(u) for u in fields["Uid"]],
                             "NoNewPrivs": fields["NoNewPrivs"][0]}
    return threads


def assert_unprivileged(pid, uid, permitted=0, min_threads=2):
    """No thread has an effective capability; the main thread keeps `permitted`.
    With something permitted, the main thread makes it effective for a moment
    while it looks for a library: then one of a few looks must find it at 0."""
    for _ in range(50):
        threads = thread_status(pid)
        if threads[pid]["CapEff"] == 0 or not permitted:
            break
        assert threads[pid]["CapEff"] & ~permitted == 0, threads[pid]
        time.sleep(0.01)
    assert len(threads) >= min_threads, threads  # the exporters' threads are checked too
    for tid, status in threads.items():
        assert status["CapEff"] == 0, (tid, threads)
        assert status["CapAmb"] == 0, (tid, threads)
        assert status["Uid"] == [uid] * 4, (tid, threads)
    assert threads[pid]["CapPrm"] == permitted, threads[pid]
    assert threads[pid]["NoNewPrivs"] == "1", threads[pid]


def scraped_count(endpoint, symbol):
    with urllib.request.urlopen(f"http://{endpoint}/metrics", timeout=5) as response:
        text = response.read().decode()
    match = re.search(rf'^ebpf_function_latency_ms_count\{{symbol="{symbol}".*\}} (\d+)$', text,
                      re.MULTILINE)
    return int(match.group(1)) if match else 0


@pytest.mark.parametrize("user", [None, "nobody"])
def test_nothing_privileged_after_attach_and_everything_goes_on(procs, tool, tmp_path, user,
                                                                receiver_program):
    if os.geteuid() != 0:
        pytest.skip("needs root: the test checks that funclatency gives root's capabilities up")
    receiver = start_receiver(procs, receiver_program)
    phased = build_dir() / "tests" / "programs" / "phased"
    truth_path = tmp_path / "truth.json"
    # Calm, hot (auto mode goes to the kernel), calm again (and back).
    work = procs.spawn([phased, "--truth", truth_path, "300:1.5", "20000:2", "300:4"])
    work.wait_for_line("stdout", r"^ready pid=\d+", 10)
    endpoint = f"127.0.0.1:{free_port()}"
    traced = procs.start_tool(
        tool, ["--json", "-v", "--mode", "auto", "--auto-threshold", "3000", "-i", "0.5",
               "--prometheus", endpoint, f"--otlp={receiver.url('http/protobuf')}",
               *(["--user", user] if user else []), "-p", work.pid, f"{phased}:phased_op"],
        env={**os.environ, "OTEL_METRIC_EXPORT_INTERVAL": "500"})
    uid = NOBODY.pw_uid if user else 0
    assert_unprivileged(traced.pid, uid)

    os.kill(work.pid, signal.SIGUSR1)
    assert wait_until(lambda: scraped_count(endpoint, "phased_op") > 0, 10.0, interval=0.2), \
        traced.describe()
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()

    calls = json.loads(truth_path.read_text())["calls"]
    records = parse_json_records(traced.text("stdout"))
    assert totals_by_symbol(traced.text("stdout"))["phased_op"]["count"] == calls
    modes = [r["mode"] for r in records if r["type"] == "interval" and r["count"] > 0]
    assert "kernel" in modes and modes[-1] == "events", modes
    stderr = traced.text("stderr")
    assert "-> kernel mode" in stderr and "-> events mode" in stderr, stderr
    exported = receiver.wait_for_requests(2)
    assert any("phased_op" in json.dumps(r) for r in exported), exported[-1]


def test_late_attach_as_another_user(procs, tool, tmp_path):
    """The library sits in the test's private (0700, root's) folder and the
    process runs as root: attaching it as nobody takes CAP_DAC_READ_SEARCH and
    CAP_SYS_PTRACE, kept permitted for this (a uprobe_multi link of the loaded
    program needs no more: kept with CAP_BPF and CAP_PERFMON alone, the
    attach fails)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    private = private_plugin(tmp_path)
    truth = tmp_path / "truth.json"
    work = spawn_dlopener(procs, private, truth, calls=300, pause=True)
    endpoint = f"127.0.0.1:{free_port()}"
    traced = start_waiting_tool(procs, tool, ["--json", "--user", "nobody", "--prometheus",
                                              endpoint, "-p", work.pid, "plugin:naming_lib_op"])
    kept = (1 << CAP_SYS_PTRACE) | (1 << CAP_DAC_READ_SEARCH)
    assert_unprivileged(traced.pid, NOBODY.pw_uid, permitted=kept)
    os.kill(work.pid, signal.SIGUSR1)
    work.wait_for_line("stdout", r"^loaded$", 10)
    traced.wait_for_line("stderr", rf"loaded {private}: tracing 1 function", TOOL_ATTACH_TIMEOUT)
    assert_unprivileged(traced.pid, NOBODY.pw_uid, permitted=kept)  # effective again only 0
    assert scraped_count(endpoint, "naming_lib_op") == 0  # served; the calls come next
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["naming_lib_op"]
    assert record["count"] == json.loads(truth.read_text())["calls"] == 300


def test_exit_still_detaches_without_privileges(procs, tool, target_app):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    work = procs.start_workload(target_app, ["--rate", "100"], wait_signal=False)
    traced = procs.start_tool(tool, ["--user", "nobody", "-p", work.pid, ":slow_op"])
    assert_breakpoint_present(work, target_app, "slow_op")
    assert_unprivileged(traced.pid, NOBODY.pw_uid, min_threads=1)
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    assert_nothing_attached(work, target_app, "slow_op")


def test_unknown_user_is_refused_before_attaching(tool, target_app):
    result = run_tool(tool, ["-v", "--user", "no-such-user-here", f"{target_app}:slow_op"])
    assert_refused(result, r"--user no-such-user-here: no such user")
    assert "attached" not in result.stderr

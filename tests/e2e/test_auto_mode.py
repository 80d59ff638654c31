"""Auto mode switches a hot function to in-kernel aggregation and back,
without losing or double-counting a call across the switches."""

import json
import os
import signal

import pytest

from conftest import EXIT_TIMEOUT, build_dir, parse_json_records

pytestmark = pytest.mark.bpf


def test_auto_mode_follows_the_call_rate_and_counts_every_call(procs, tool, tmp_path):
    phased = build_dir() / "tests" / "programs" / "phased"
    truth_path = tmp_path / "truth.json"
    # Calm, hot, calm: 300/s is below the threshold, 20000/s far above it,
    # and the last calm spell outlasts the 2 s the policy waits before going back.
    work = procs.spawn([phased, "--truth", truth_path, "300:1.5", "20000:2", "300:4"])
    work.wait_for_line("stdout", r"^ready pid=\d+", 10)
    traced = procs.start_tool(tool, ["--json", "-v", "--mode", "auto", "--auto-threshold", "3000",
                                     "-i", "0.5", "-p", work.pid, f"{phased}:phased_op"])
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()

    calls = json.loads(truth_path.read_text())["calls"]
    records = parse_json_records(traced.text("stdout"))
    total = [r for r in records if r["type"] == "total"]
    assert len(total) == 1
    assert total[0]["count"] == calls, traced.describe()
    assert total[0]["lost"] == 0

    # Interval records carry the mode in force: events, then kernel, then events.
    modes = [r["mode"] for r in records if r["type"] == "interval" and r["count"] > 0]
    assert modes[0] == "events", modes
    assert "kernel" in modes, modes
    assert modes[-1] == "events", modes
    first_kernel = modes.index("kernel")
    assert "events" in modes[first_kernel:], modes
    # Interval counts add up to the total: nothing counted twice.
    assert sum(r["count"] for r in records if r["type"] == "interval") == calls

    stderr = traced.text("stderr")
    assert "-> kernel mode" in stderr and "-> events mode" in stderr, stderr

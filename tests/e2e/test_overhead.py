"""--calibrate measures the probes' own cost; --subtract-overhead takes it
off, so an empty function's reported median drops near zero."""

import os
import re
import signal

import pytest

from conftest import EXIT_TIMEOUT, build_dir, run_tool, totals_by_symbol

pytestmark = pytest.mark.bpf


def test_calibrate_prints_the_cost_of_each_placement(tool):
    result = run_tool(tool, ["--calibrate"], timeout=60)
    assert result.returncode == 0, result.stderr
    rows = re.findall(r"^\s+(emulated|single-stepped).*?(\d+) ns\s+(\d+) ns$", result.stdout, re.M)
    assert [row[0] for row in rows] == ["emulated", "single-stepped"], result.stdout
    for _, uretprobe_ns, ret_ns in rows:
        # Every placement costs something, and far less than a millisecond.
        assert 0 < int(uretprobe_ns) < 1_000_000 and 0 < int(ret_ns) < 1_000_000, result.stdout


def test_subtracting_the_overhead_brings_an_empty_function_near_zero(procs, tool):
    # Both runs trace the same calls at the same time, so a busy machine
    # slows them alike.
    phased = build_dir() / "tests" / "programs" / "phased"
    work = procs.spawn([phased, "--truth", procs.tmp_path / "truth.json", "2000:1.5"])
    work.wait_for_line("stdout", r"^ready pid=\d+", 10)
    runs = [procs.start_tool(tool, ["--json", "--mode", "kernel", "-p", work.pid, *extra,
                                    f"{phased}:phased_op"])
            for extra in ([], ["--subtract-overhead", "-v"])]
    os.kill(work.pid, signal.SIGUSR1)
    assert work.wait(60) == 0, work.describe()
    medians = []
    for traced in runs:
        assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
        record = totals_by_symbol(traced.text("stdout"))["phased_op"]
        assert record["count"] > 200
        medians.append(record["p50_ns"])
    plain, subtracted = medians
    calibration = runs[1].text("stderr")
    assert plain > 500, plain  # an empty call looks like the probes' cost...
    # ...until that cost is taken off.
    assert subtracted < plain / 2, f"plain {plain} ns, subtracted {subtracted} ns\n{calibration}"

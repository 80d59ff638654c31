"""The console report: a header per function, log2 rows equal to the ground
truth, and a summary line; SIGINT prints it and exits 0."""

import re
import signal

import pytest

from conftest import assert_rows_match_truth, rows_from_console

pytestmark = pytest.mark.bpf


def test_console_histogram_matches_truth(procs, tool, target_app):
    work = procs.start_workload(target_app, ["--calls", "200", "--seed", "3"])
    traced = procs.start_tool(tool, ["-p", work.pid, f"{target_app}:slow_op"])
    work.start()
    truth = work.finish()
    # Whether or not it already exited because the process did, SIGINT must
    # leave it with exit code 0 and the report printed.
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    lines = traced.lines("stdout")
    headers = [i for i, line in enumerate(lines) if re.match(r"^slow_op: \d+ calls", line)]
    assert headers, traced.describe()
    last = lines[headers[-1]:]
    assert lines[headers[-1]] == "slow_op: 200 calls", traced.describe()
    assert re.match(r"^\s+usec\s+count\s+distribution", last[1]), traced.describe()
    summary = next((line for line in last if line.lstrip().startswith("count ")), None)
    assert summary is not None, traced.describe()
    for field in ("count 200", "avg", "min", "max", "p50", "p95", "p99", "lost 0"):
        assert field in summary, f"{field!r} missing from summary: {summary}"
    assert_rows_match_truth(rows_from_console(last), truth.function("slow_op"), "console rows")

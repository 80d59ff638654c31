"""Agent runs with ground truth, --calibrate and --subtract-overhead, shared
by the tests that start a funclatency other than the build tree's (the
installed package's, a stripped copy).

Why: the package strips funclatency, and agent mode places probes on
funclatency's own code to calibrate their cost (so do --calibrate and
--subtract-overhead); a binary that works in the build tree can fail there.
These helpers start a real agent (--follow, or --config with an agent.yaml)
over a copy of target-app and compare what it counted with the calls
target-app made, exactly."""

import re
import signal
from pathlib import Path

import pytest

from conftest import EXIT_TIMEOUT, parse_json_records, run_tool, totals_by_symbol, wait_until

AGENT_START_TIMEOUT = 30.0
ATTACHED = r"^funclatency: following .*: \d+ functions? attached in "
FUNCTIONS = ("slow_op", "fast_op")
CALIBRATION_ROW = re.compile(r"^\s+(emulated|single-stepped)\D*?(\d+) ns\s+(\d+) ns$", re.M)


def agent_config(path: Path, app: Path) -> Path:
    """An agent.yaml following `app`'s FUNCTIONS, by process."""
    path.write_text("targets:\n"
                    f"  - name: app\n    program: {app}\n"
                    f"    functions: [{', '.join(FUNCTIONS)}]\n"
                    "    by: [pid]\n")
    return path


def agent_counts_match_truth(procs, tool: Path, app: Path, agent_args, calls=300,
                             stop_signal=signal.SIGTERM):
    """Starts `tool` with `agent_args` (following `app`), then a target-app
    run of `calls` slow_op calls on two threads; stops the agent with
    `stop_signal` once the run ended. Asserts every function's calls equal
    target-app's own count and nothing is lost; returns the agent's records."""
    agent = procs.spawn([tool, "--json", "-i", "0.5", *agent_args])
    agent.wait_for_line("stderr", r"^Following ", AGENT_START_TIMEOUT)
    work = procs.start_workload(app, ["--calls", str(calls), "--threads", "2", "--rate", "500"])

    def attached():
        return any(re.search(ATTACHED, line) for line in agent.lines("stderr"))
    if not wait_until(attached, AGENT_START_TIMEOUT):
        pytest.fail(f"the agent did not attach to {app}\n{agent.describe()}")
    work.start()
    truth = work.finish()
    assert agent.stop(stop_signal) == 0, agent.describe()

    records = parse_json_records(agent.text("stdout"))
    counted, lost = {}, {}
    for record in records:
        if record["type"] == "interval" and "symbol" in record:
            counted[record["symbol"]] = counted.get(record["symbol"], 0) + record["count"]
            lost[record["symbol"]] = lost.get(record["symbol"], 0) + record["lost"]
    expected = {name: truth.function(name)["returned"] for name in FUNCTIONS}
    assert truth.function("slow_op")["calls"] == calls, truth.data
    assert counted == expected, f"agent {counted}, target-app {expected}\n{agent.describe()}"
    assert all(n == 0 for n in lost.values()), f"lost {lost}\n{agent.describe()}"
    return records


def assert_calibrates(tool: Path):
    """--calibrate prints its table: both entry kinds, a cost for each exit."""
    result = run_tool(tool, ["--calibrate"], timeout=60)
    assert result.returncode == 0, result.stderr
    rows = CALIBRATION_ROW.findall(result.stdout)
    assert [row[0] for row in rows] == ["emulated", "single-stepped"], result.stdout
    assert all(int(ns) > 0 for row in rows for ns in row[1:]), result.stdout


def assert_subtracts_overhead(procs, tool: Path, app: Path):
    """-p PID --subtract-overhead over a target-app run: the calibration
    table on stderr (-v), every call of slow_op counted."""
    work = procs.start_workload(app, ["--calls", "200", "--rate", "1000"])
    traced = procs.start_tool(tool, ["--json", "--subtract-overhead", "-v", "-p", work.pid,
                                     f"{app}:slow_op"])
    work.start()
    truth = work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    assert len(CALIBRATION_ROW.findall(traced.text("stderr"))) == 2, traced.describe()
    total = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert total["count"] == truth.function("slow_op")["returned"] == 200, total
    assert total["lost"] == 0, total

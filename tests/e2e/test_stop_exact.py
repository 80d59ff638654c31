"""Stopping a trace invents nothing. A busy target-app (two threads, three
traced functions) is traced from the middle of its run and the trace stopped
in the middle too (-d, SIGINT, SIGTERM; events and kernel mode; return
probes and ret-instruction probes, with -p and system-wide, by three tracers
at once): every call the tool counts was made (counts never exceed
target-app's own), and none is lost, though calls enter and return while the
probes come and go. Were an exit probe removed before its entry probe (or
attached after it), a call entering in between would stay on its thread's
shadow stack and the thread's next call would count it lost. The agent
(--follow) stopped by SIGTERM, as the kubelet stops a pod, is held to the
same."""

import signal
import time

import pytest

from conftest import EXIT_TIMEOUT, parse_json_records, wait_until

pytestmark = pytest.mark.bpf

FUNCTIONS = ("slow_op", "fast_op", "cet_op")
TRACE_SECONDS = 2


def busy_target(procs, app):
    """target-app calling its functions until SIGINT, on two threads."""
    return procs.start_workload(app, ["--calls", "0", "--threads", "2"], wait_signal=False)


def per_function(records):
    """{symbol: (calls, lost)} summed over the interval records, and the
    total records' {symbol: (calls, lost)}."""
    intervals, totals = {}, {}
    for record in records:
        if "symbol" not in record:
            continue
        into = intervals if record["type"] == "interval" else totals
        calls, lost = into.get(record["symbol"], (0, 0))
        into[record["symbol"]] = (calls + record["count"], lost + record["lost"])
    return intervals, totals


def assert_invents_nothing(tracer, truth, what):
    records = parse_json_records(tracer.text("stdout"))
    intervals, totals = per_function(records)
    assert set(totals) == set(FUNCTIONS), f"{what}: {totals}\n{tracer.describe()}"
    # The intervals add up to the totals: the last interval is the stop's.
    assert intervals == totals, f"{what}: intervals {intervals}, totals {totals}"
    for name, (calls, lost) in totals.items():
        made = truth.function(name)["returned"]
        assert lost == 0, f"{what}: {name}: {lost} calls counted lost\n{tracer.describe()}"
        assert 0 < calls <= made, f"{what}: {name}: tool {calls} calls, target-app made {made}"


@pytest.mark.parametrize("mode", ["events", "kernel"])
@pytest.mark.parametrize("stop", ["duration", "SIGINT", "SIGTERM"])
def test_stopping_mid_flight_loses_nothing(procs, tool, private_app, mode, stop):
    target = busy_target(procs, private_app)
    duration = ["-d", str(TRACE_SECONDS)] if stop == "duration" else []
    # Three tracers at once: each exit kind with -p, and return probes
    # system-wide (only this test runs its copy of target-app).
    tracers = {(exits, scope): procs.start_tool(tool, [
        "--json", "--mode", mode, "-i", "0.5", "--exit-probes", exits, *duration,
        *(["-p", target.pid] if scope == "-p" else []),
        *[f"{private_app}:{f}" for f in FUNCTIONS]])
        for exits, scope in (("uretprobe", "-p"), ("ret", "-p"), ("uretprobe", "system-wide"))}
    if stop == "duration":
        for tracer in tracers.values():
            assert tracer.wait(TRACE_SECONDS + EXIT_TIMEOUT) == 0, tracer.describe()
    else:
        time.sleep(TRACE_SECONDS)
        for tracer in tracers.values():
            tracer.send(getattr(signal, stop))
        for tracer in tracers.values():
            assert tracer.wait(EXIT_TIMEOUT) == 0, tracer.describe()
    target.process.send(signal.SIGINT)
    truth = target.finish()
    for (exits, scope), tracer in tracers.items():
        assert_invents_nothing(tracer, truth,
                               f"{mode} mode, exit by {exits}, {scope}, stopped by {stop}")


def test_agent_stopped_by_sigterm_loses_nothing(procs, tool, private_app):
    agent = procs.spawn([tool, "--follow", "--json", "-i", "0.5",
                         *[f"{private_app}:{f}" for f in FUNCTIONS]])
    agent.wait_for_line("stderr", r"^Following ", 30)
    target = busy_target(procs, private_app)
    assert wait_until(lambda: "functions attached in" in agent.text("stderr"), 30), \
        agent.describe()
    time.sleep(TRACE_SECONDS)
    assert agent.stop(signal.SIGTERM) == 0, agent.describe()
    target.process.send(signal.SIGINT)
    truth = target.finish()
    assert_invents_nothing(agent, truth, "the agent, stopped by SIGTERM")

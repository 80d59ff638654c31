"""Go programs: functions found in .gopclntab (stripped binaries
too), calls paired per goroutine while goroutines move between threads and
their stacks are copied, calls a panic abandons counted lost, and a real Go
server (Debian's prometheus) that keeps running while it is traced.

The traced program is tests/programs/go (go-workload, and go-workload-stripped
built with -ldflags=-s -w); each scenario reports its own ground truth, as the
C++ workloads do. Every traced function there times its own body, so each
call's log2 row is bounded: no lower than its body's, no higher than what its
caller measured around the call.
"""

import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, free_port, parse_json_records, record_problems, run_tool,
                      totals_by_symbol, wait_until)

MODES = ["events", "kernel"]
VARIANTS = ["go-workload", "go-workload-stripped"]
# Scenario of go-workload -> the functions it calls (traced by these names).
SCENARIOS = {
    "sleepy": ["main.sleepy"],
    "grow": ["main.grow", "main.bigframe"],
    "recurse": ["main.recurse"],
    "panic": ["main.panicky", "main.recovers"],
    "panic-same-site": ["main.panicky"],
}
PROMETHEUS = Path("/usr/bin/prometheus")
PROMETHEUS_READY_TIMEOUT = 30.0
SERVE = "net/http.(*conn).serve"
# What the Go runtime prints when a stack walk meets a return address it does
# not know (a uretprobe trampoline) or when it dies.
GO_RUNTIME_TROUBLE = re.compile(r"^(runtime:|fatal error)|unexpected return pc|^panic:|"
                                r"^goroutine \d+ \[", re.MULTILINE)


# --- What the program itself must show, traced or not -------------------------


def scenario_problems(scenario, truth):
    """Where go-workload (run with the scenario's defaults) did not do what the
    scenario is for; [] when it did."""
    fn = truth.function
    problems = []

    def expect(what, actual, wanted):
        if actual != wanted:
            problems.append(f"{what}: {actual}, expected {wanted}")

    if scenario == "sleepy":
        expect("main.sleepy calls returned", fn("main.sleepy")["returned"], 50 * 8)
        # The point of the scenario: calls that end on another thread.
        if fn("main.sleepy")["migrated"] == 0:
            problems.append("no main.sleepy call resumed on another thread")
    elif scenario == "grow":
        for name in ("main.grow", "main.bigframe"):
            expect(f"{name} calls returned", fn(name)["returned"], 40)
            expect(f"{name} calls during which the stack was copied", fn(name)["stack_moved"], 40)
        # grow's stack is copied while its body runs; bigframe's at its entry
        # (morestack in its prologue), before its body.
        expect("main.grow calls whose body saw the stack copied",
               fn("main.grow")["stack_moved_in_body"], 40)
        expect("main.bigframe calls whose body saw the stack copied",
               fn("main.bigframe")["stack_moved_in_body"], 0)
    elif scenario == "recurse":
        expect("main.recurse calls returned (20 outer calls, depth 5)",
               fn("main.recurse")["returned"], 100)
    elif scenario.startswith("panic"):
        expect("main.panicky calls abandoned by a panic", fn("main.panicky")["abandoned"], 20)
        expect("main.panicky calls returned", fn("main.panicky")["returned"], 50)
    if scenario == "panic":
        expect("main.recovers calls returned (their panic recovered inside)",
               fn("main.recovers")["returned"], 50)
        expect("main.recovers calls abandoned", fn("main.recovers")["abandoned"], 0)
    for name in SCENARIOS[scenario]:
        if fn(name)["abandoned"] == 0 and fn(name)["calls"] != fn(name)["returned"]:
            problems.append(f"{name}: calls {fn(name)['calls']} != returned")
        rows_total = sum(r["count"] for r in fn(name)["log2_usec"])
        expect(f"{name}: calls in its log2 rows", rows_total, fn(name)["returned"])
    return problems


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_program_reports_its_scenario_untraced(procs, go_program, scenario):
    work = procs.start_workload(go_program("go-workload"), ["--scenario", scenario],
                                wait_signal=False)
    truth = work.finish(timeout=60.0)
    problems = scenario_problems(scenario, truth)
    assert not problems, f"go-workload --scenario {scenario}:\n" + "\n".join(problems)


# --- Traced: counts, lost calls and rows equal the ground truth -----------------


def function_problems(record, expected, mode):
    name = expected["name"]
    if record is None:
        return [f"{name}: no total record"]
    problems = [] if record["mode"] == mode else [f"mode {record['mode']}, asked for {mode}"]
    # Rows out of [body's row, caller's row]: a call paired with another
    # goroutine's or another frame's end.
    return [f"{name}: {problem}" for problem in problems + record_problems(record, expected)]


def trace_go(procs, tool, program, symbols, mode, workload_args, tool_args=()):
    """trace_workload() for go-workload, which when it dies says why in its
    first lines (a uretprobe's return address met by a stack walk: "runtime:
    ... unexpected return pc", "fatal error"), before a goroutine dump that a
    failure message would otherwise show only the end of."""
    work = procs.start_workload(program, workload_args)
    traced = procs.start_tool(tool, ["--json", "--mode", mode, *tool_args, "-p", work.pid,
                                     *[f"{program}:{symbol}" for symbol in symbols]])
    work.start()
    code = work.process.wait(120.0)
    if code != 0:
        how = ("did not finish within 120 s" if code is None else
               f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with {code}")
        first_lines = "\n".join(work.process.lines("stderr")[:12])
        pytest.fail(f"{program.name} {how} while traced; it said first:\n{first_lines}\n"
                    f"{work.process.describe()}")
    truth = work.finish()
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency exited with {code} after the -p process did\n{traced.describe()}"
    return totals_by_symbol(traced.text("stdout")), truth


@pytest.mark.bpf
@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_go_calls_match_ground_truth(procs, tool, go_program, variant, mode, scenario):
    symbols = SCENARIOS[scenario]
    totals, truth = trace_go(procs, tool, go_program(variant), symbols, mode,
                             ["--scenario", scenario])
    problems = scenario_problems(scenario, truth)
    for name in symbols:
        problems += function_problems(totals.get(name), truth.function(name), mode)
    assert not problems, (f"{variant} --scenario {scenario} ({mode}), tool records "
                          f"{sorted(totals)}:\n" + "\n".join(problems))


# --- Functions found in .gopclntab ---------------------------------------------


def listed_functions(tool, target):
    """{name: (address, line)} from `funclatency -l TARGET`."""
    result = run_tool(tool, ["-l", target])
    assert result.returncode == 0, f"funclatency -l {target}: {result.returncode}\n{result.stderr}"
    listed = {}
    for line in result.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith("0x"):
            listed[parts[0]] = (int(parts[1], 16), line)
    return listed


def nm_addresses(binary):
    out = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return {parts[2]: int(parts[0], 16) for parts in map(str.split, out.splitlines())
            if len(parts) == 3}


@pytest.mark.parametrize("variant", VARIANTS)
def test_lists_go_functions(tool, go_program, variant):
    # Both builds have the same .text; the unstripped one's symbol table says
    # where each function starts.
    addresses = nm_addresses(go_program("go-workload"))
    listed = listed_functions(tool, f"{go_program(variant)}:main.*")
    problems = []
    for name in [name for names in SCENARIOS.values() for name in names] + ["main.main"]:
        if name not in listed:
            problems.append(f"{name} not listed")
            continue
        address, line = listed[name]
        if address != addresses[name]:
            problems.append(f"{name} at {address:#x}, the symbol table says {addresses[name]:#x}")
        if "not probed" in line:
            problems.append(f"{name}: {line}")
    assert not problems, f"funclatency -l {variant}:main.*\n" + "\n".join(problems)


def test_lists_a_function_of_stripped_prometheus(tool):
    if not PROMETHEUS.is_file():
        pytest.fail(f"{PROMETHEUS} is not installed: run scripts/setup")
    listed = listed_functions(tool, f"{PROMETHEUS}:{SERVE}")
    assert list(listed) == [SERVE], listed


# --- A real Go server: Debian's prometheus ---------------------------------------


def get_on_own_connection(port, path="/-/healthy", timeout=5.0):
    """GET with Connection: close; reads until the server closes the
    connection. Returns the status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
                  .encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply.split(b"\r\n", 1)[0].decode(errors="replace")


def start_prometheus(procs, tmp_path):
    if not PROMETHEUS.is_file():
        pytest.fail(f"{PROMETHEUS} is not installed: run scripts/setup")
    port = free_port()
    config = tmp_path / "prometheus.yml"
    # Nothing to scrape: no connection is made but the test's own.
    config.write_text("global:\n  scrape_interval: 1h\n  evaluation_interval: 1h\n")
    server = procs.spawn([PROMETHEUS, f"--config.file={config}",
                          f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{port}"])

    def ready():
        if server.popen.poll() is not None:
            pytest.fail(f"prometheus exited\n{server.describe()}")
        try:
            return get_on_own_connection(port, "/-/ready", timeout=1.0).endswith(" 200 OK")
        except OSError:
            return False

    if not wait_until(ready, PROMETHEUS_READY_TIMEOUT, interval=0.2):
        pytest.fail(f"prometheus not ready within {PROMETHEUS_READY_TIMEOUT}s\n{server.describe()}")
    return server, port


def assert_answers(server, port, when):
    """Prometheus is alive and answers 200 on a new connection."""
    try:
        status = get_on_own_connection(port)
    except OSError as error:
        status = f"nothing ({error})"
    assert status.endswith(" 200 OK") and server.popen.poll() is None, (
        f"prometheus answered {status!r} {when}\n{server.describe()}")


def counted_in_intervals(tool_process, symbol):
    return sum(r["count"] for r in parse_json_records(tool_process.text("stdout"))
               if r.get("type") == "interval" and r.get("symbol") == symbol)


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_prometheus_connections_counted_and_server_unharmed(procs, tool, tmp_path, mode):
    server, port = start_prometheus(procs, tmp_path)
    # The readiness checks' connections are closed; let their serve calls end
    # before attaching, so that every call the tool sees is one made below.
    time.sleep(0.5)
    traced = procs.start_tool(tool, ["-p", server.pid, "--json", "-i", "1", "--mode", mode,
                                     f":{SERVE}"])
    connections = 20
    for _ in range(connections):
        assert_answers(server, port, "while traced")
    # Each connection's serve call returns right after closing it; the tool
    # reports it at its next interval.
    wait_until(lambda: counted_in_intervals(traced, SERVE) >= connections, 10.0, interval=0.2)
    code = traced.stop(signal.SIGINT)
    assert code == 0, f"funclatency exited with {code}\n{traced.describe()}"
    totals = totals_by_symbol(traced.text("stdout"))
    assert SERVE in totals, f"no total record for {SERVE}\n{traced.describe()}"
    record = totals[SERVE]
    assert (record["count"], record["lost"]) == (connections, 0), (
        f"{SERVE} ({mode}): {record['count']} calls, {record['lost']} lost; {connections} "
        f"connections were served, each to its end\n{traced.describe()}")
    assert record["mode"] == mode
    # Prometheus lives on, answers, and its runtime never complained.
    assert_answers(server, port, "after the tool exited")
    log = server.text("stderr") + "\n" + server.text("stdout")
    trouble = GO_RUNTIME_TROUBLE.search(log)
    assert trouble is None, (f"prometheus's Go runtime complained ({trouble.group(0)!r})\n"
                             f"{server.describe()}")
    code = server.stop(signal.SIGTERM, timeout=EXIT_TIMEOUT)
    assert code == 0, f"prometheus exited with {code} on SIGTERM\n{server.describe()}"


# --- Slowest calls: Go stacks by frame pointers --------------------------------


@pytest.mark.bpf
@pytest.mark.parametrize("variant", VARIANTS)
def test_slowest_go_calls_carry_their_goroutine_stack(procs, tool, go_program, variant):
    """--slowest on main.sleepy: the exemplars' stacks (frame pointers: Go
    has no .eh_frame; stripped or not) name the function, the closure that
    called it, the truth wrapper and the goroutine's start, in that order,
    and the program keeps running to a clean exit."""
    program = go_program(variant)
    work = procs.start_workload(program, ["--scenario", "sleepy"])
    traced = procs.start_tool(tool, ["--json", "--slowest", "2", "-p", work.pid,
                                     f"{program}:main.sleepy"])
    work.start()
    work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    exemplars = totals_by_symbol(traced.text("stdout"))["main.sleepy"]["exemplars"]
    assert len(exemplars) == 2, exemplars
    want = ["main.sleepy", "main.runSleepy.func1.1", "main.(*functionTruth).call",
            "main.runSleepy.func1", "runtime.goexit"]
    for exemplar in exemplars:
        assert exemplar["pid"] == work.pid and exemplar["duration_ns"] >= 3_000_000, exemplar
        # The symbol table names assembly functions with their ABI
        # ("runtime.goexit.abi0"); .gopclntab, read for stripped ones, does not.
        symbols = [frame.get("symbol", "").removesuffix(".abi0") for frame in exemplar["stack"]]
        assert symbols == want, symbols
        assert all(frame["binary"] == str(program) for frame in exemplar["stack"]), exemplar


# --- A goroutine's last call abandoned by a panic, then the process exits -------


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_last_call_a_panic_abandons_is_counted_lost(procs, tool, go_program, mode):
    """panic-last: 500 calls of main.panicky, each panicking through it and
    recovered in an untraced caller, the last one too; then the program
    exits. No later call shows the last frame abandoned: it is counted lost
    because its process is gone. Calls counted + lost = calls made, to the
    last one (before, the last one was neither)."""
    calls = 500
    totals, truth = trace_go(procs, tool, go_program("go-workload"), ["main.panicky"], mode,
                             ["--scenario", "panic-last", "--calls", str(calls)])
    fn = truth.function("main.panicky")
    assert (fn["returned"], fn["abandoned"]) == (0, calls), fn
    record = totals["main.panicky"]
    assert record["count"] + record["lost"] == calls, record
    problems = function_problems(record, fn, mode)
    assert not problems, "\n".join(problems)


# --- Goroutines inside traced calls: the kernel's room for them -------------------


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_goroutines_past_go_goroutines_are_counted_lost(procs, tool, go_program, mode):
    """sleepy: 50 goroutines parked inside main.sleepy at once, room for 10
    (--go-goroutines): a call that finds no room is counted lost, never
    dropped without a word nor mispaired; the calls that found room are
    counted."""
    totals, truth = trace_go(procs, tool, go_program("go-workload"), ["main.sleepy"], mode,
                             ["--scenario", "sleepy"], tool_args=["--go-goroutines", "10"])
    fn = truth.function("main.sleepy")
    assert fn["returned"] == 50 * 8, fn
    record = totals["main.sleepy"]
    assert record["count"] + record["lost"] == fn["returned"], record
    assert record["lost"] > 0 and record["count"] > 0, record


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_goroutines_that_end_inside_a_call_give_their_room_back(procs, tool, go_program, mode):
    """panic-goroutines: 8 goroutines in turn, each ending with a call of
    main.panicky abandoned, in a process that runs on; room for 2 goroutines
    in traced calls. The stack an ended goroutine left is taken at the next
    interval (its g holds another goroutine's goid), its frame counted lost:
    every round finds room, and every call is counted or lost exactly."""
    rounds = 8
    totals, truth = trace_go(procs, tool, go_program("go-workload"), ["main.panicky"], mode,
                             ["--scenario", "panic-goroutines", "--calls", str(rounds),
                              "--procs", "1"],
                             tool_args=["--go-goroutines", "2", "-i", "0.1"])
    fn = truth.function("main.panicky")
    assert (fn["returned"], fn["abandoned"]) == (rounds, rounds), fn
    problems = function_problems(totals["main.panicky"], fn, mode)
    assert not problems, "\n".join(problems)


@pytest.mark.bpf
def test_without_intervals_ended_goroutines_are_looked_for_every_second(procs, tool, go_program):
    """The same without -i (an agent that only exports): the stacks of ended
    goroutines are looked for every second, so 10 rounds 500 ms apart fit in
    room for 6 goroutines."""
    rounds = 10
    totals, truth = trace_go(procs, tool, go_program("go-workload"), ["main.panicky"], "events",
                             ["--scenario", "panic-goroutines", "--calls", str(rounds),
                              "--procs", "1"],
                             tool_args=["--go-goroutines", "6"])
    fn = truth.function("main.panicky")
    assert (fn["returned"], fn["abandoned"]) == (rounds, rounds), fn
    problems = function_problems(totals["main.panicky"], fn, "events")
    assert not problems, "\n".join(problems)

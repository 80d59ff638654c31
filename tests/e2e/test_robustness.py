"""The tool under hostile conditions: process churn, traced processes killed
inside a traced function, recursion past the kernel's 64 pending return
probes, every stop signal and a closed stdout, and other tracers on the same
function. Real BPF, real processes (tests/programs/robustness)."""

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, TOOL_ATTACH_TIMEOUT, assert_breakpoint_present,
                      assert_nothing_attached, build_dir, built, rows_from_console,
                      totals_by_symbol)

pytestmark = pytest.mark.bpf

LIBBPF_TOOLS_FUNCLATENCY = "/usr/sbin/funclatency"
STOP_WITHIN = 1.0  # seconds from a stop signal (or a closed stdout) to exit


@pytest.fixture(scope="session")
def robust():
    """robust("churn") -> path of tests/programs/robust-churn."""
    def path(name):
        return built(build_dir() / "tests" / "programs" / f"robust-{name}", "robustness-programs")
    return path


def vm_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def total_record(traced, symbol):
    totals = totals_by_symbol(traced.text("stdout"))
    assert symbol in totals, f"no total record for {symbol}\n{traced.describe()}"
    return totals[symbol]


def stop_tool(traced, signum=signal.SIGINT):
    code = traced.stop(signum)
    assert code == 0, f"funclatency exited with {code}\n{traced.describe()}"


# --- Churn ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_churn_every_call_counted_memory_bounded(procs, tool, robust, mode):
    """System-wide tracing while 50 processes a second start, call churn_op
    and exit (a third of them also fork a child that calls it, a third exec
    a fresh image that calls it) for 10 seconds."""
    churn = robust("churn")
    # Stays alive, mapping the traced binary, for the whole test.
    bystander = procs.start_workload(churn, ["--spawn-rate", "1", "--spawn-seconds", "1"])
    launcher = procs.start_workload(churn, ["--spawn-rate", "50", "--spawn-seconds", "10",
                                            "--calls", "20"])
    traced = procs.start_tool(tool, ["--json", "--mode", mode, f"{churn}:churn_op"])
    assert_breakpoint_present(bystander, churn, "churn_op")

    rss_kb = []
    sampling = threading.Event()

    def sample_rss():
        while not sampling.wait(0.5):
            rss_kb.append(vm_rss_kb(traced.pid))

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    launcher.start()
    truth = launcher.finish(timeout=60)
    sampling.set()
    sampler.join()
    stop_tool(traced)

    assert truth.data["failed"] == 0, truth.data
    assert truth.data["processes"] == 500, truth.data
    expected = truth.function("churn_op")["calls"]
    # Worker i is plain, fork or exec by i % 3; fork and exec call twice over.
    assert expected == 20 * sum(1 if i % 3 == 0 else 2 for i in range(500)), truth.data
    record = total_record(traced, "churn_op")
    assert record["count"] == expected, f"{record}\n{truth.data}"
    assert record["lost"] == 0, record
    # Memory: flat once warmed up (the first two seconds), whatever the churn.
    warm = rss_kb[4:]
    assert len(warm) >= 10, rss_kb
    growth_kb = max(warm) - warm[0]
    assert growth_kb <= 2048, f"RSS grew by {growth_kb} kB during churn: {rss_kb}"
    assert_nothing_attached(bystander, churn, "churn_op")


# --- Processes killed inside a traced function ----------------------------------------


def start_blocked(procs, stuck, threads=4):
    """A robust-stuck whose `threads` threads enter stuck_op() and stay there
    once started; it prints "inside N" when they all are."""
    return procs.start_workload(stuck, ["--block-threads", threads])


def test_killed_inside_traced_function_then_next_process_exact(procs, tool, robust):
    stuck = robust("stuck")
    traced = procs.start_tool(tool, ["--json", "--mode", "events", f"{stuck}:stuck_op"])
    for round_number in range(3):
        blocked = start_blocked(procs, stuck)
        blocked.start()
        blocked.process.wait_for_line("stdout", r"^inside 4$", 10)
        os.kill(blocked.pid, signal.SIGKILL)
        assert blocked.process.wait(10) == -signal.SIGKILL
        assert traced.popen.poll() is None, f"the tool died\n{traced.describe()}"
    # A thread that exits the process from inside the traced function.
    dies = procs.start_workload(stuck, ["--calls", "20", "--exit-inside"])
    dies.start()
    assert dies.process.wait(10) == 0
    after = procs.start_workload(stuck, ["--calls", "50"])
    after.start()
    truth = after.finish()
    stop_tool(traced)
    record = total_record(traced, "stuck_op")
    # 12 killed threads and one exit never returned: no duration, and each
    # a lost call (its thread ended inside it).
    assert record["count"] == truth.function("stuck_op")["calls"] + 20 == 70, record
    assert record["lost_unreturned"] == record["lost"] == 13, record
    assert record["max_ns"] < 50_000_000, f"a dead thread's frame was paired: {record}"


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_pid_killed_inside_traced_function_ends_tool(procs, tool, robust, mode):
    stuck = robust("stuck")
    blocked = start_blocked(procs, stuck)
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", blocked.pid,
                                     f"{stuck}:stuck_op"])
    blocked.start()
    blocked.process.wait_for_line("stdout", r"^inside 4$", 10)
    os.kill(blocked.pid, signal.SIGKILL)
    started = time.monotonic()
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency -p: exit {code} after the process was killed\n" \
        f"{traced.describe()}"
    assert time.monotonic() - started < 2.0
    record = total_record(traced, "stuck_op")
    # The 4 threads killed inside it: lost calls.
    assert record["count"] == 0 and record["lost_unreturned"] == record["lost"] == 4, record


# --- Deep recursion -------------------------------------------------------------------

DEEP_CALLS = 5
DEEP_DEPTH = 100
SHALLOW_CALLS = 20
KERNEL_PENDING_RETURNS = 64  # per thread, and FL_MAX_DEPTH of the shadow stack


@pytest.mark.parametrize("language, exit_probe", [("c", "return probe"), ("cpp", "ret probe")])
@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_recursion_past_64_pending_returns(procs, tool, robust, language, exit_probe, mode):
    """deep_recurse(100), not tail-recursive: each outer call times its
    outermost 64 levels and counts the 36 deeper ones as lost (lost_depth),
    then 20 calls of depth 3 on the same thread are all exact."""
    program = robust(f"deep-{language}")
    work = procs.start_workload(program, ["--depth", DEEP_DEPTH, "--calls", DEEP_CALLS,
                                          "--shallow-calls", SHALLOW_CALLS])
    traced = procs.start_tool(tool, ["-v", "--json", "--mode", mode, "-p", work.pid,
                                     f"{program}:deep_recurse"])
    assert re.search(rf"deep_recurse: entry probe .*exit: .*{exit_probe}", traced.text("stderr")), \
        traced.describe()
    work.start()
    truth = work.finish().function("deep_recurse")
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    record = total_record(traced, "deep_recurse")

    timed_per_call = KERNEL_PENDING_RETURNS
    beyond = DEEP_DEPTH - KERNEL_PENDING_RETURNS
    shallow = SHALLOW_CALLS * truth["shallow_depth"]
    assert record["count"] == DEEP_CALLS * timed_per_call + shallow, record
    assert record["lost_depth"] == DEEP_CALLS * beyond, record
    assert record["lost_unreturned"] == 0 and record["lost_ringbuf"] == 0, record
    assert record["lost"] == DEEP_CALLS * beyond, record
    # Never mispaired: no duration longer than the longest call the program
    # measured around it (an outer call, or a shallow one switched out on a
    # busy machine)...
    assert record["max_ns"] <= max(truth["outer_max_ns"], truth["shallow_max_ns"]), \
        (record, truth)
    # ...and the timed deep calls are the outermost levels (level k takes at
    # least k * 20 us, the shallow calls' levels 1-3 at least 20 us).
    own = truth["level_own_ns"]
    assert record["min_ns"] >= own, record
    deep_rows_low_ns = (beyond + 1) * own
    deep_calls_seen = sum(count for low, high, count in record["log2_buckets"]
                          if high >= deep_rows_low_ns)
    assert deep_calls_seen >= DEEP_CALLS * timed_per_call, record
    outermost = sum(range(beyond + 1, DEEP_DEPTH + 1)) * own * DEEP_CALLS
    assert record["sum_ns"] >= outermost, (record, truth)


# --- Signals and a closed stdout ------------------------------------------------------


@pytest.fixture
def running_target(procs, target_app):
    return procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_stop_signal_exits_within_a_second_detached(procs, tool, target_app, running_target,
                                                    signum):
    traced = procs.start_tool(tool, ["--json", f"{target_app}:slow_op"])
    assert_breakpoint_present(running_target, target_app, "slow_op")
    time.sleep(0.5)
    sent = time.monotonic()
    traced.send(signum)
    code = traced.wait(EXIT_TIMEOUT)
    took = time.monotonic() - sent
    assert code == 0, f"exit {code}\n{traced.describe()}"
    assert took <= STOP_WITHIN, f"took {took:.2f}s to exit after {signum.name}"
    assert total_record(traced, "slow_op")["count"] > 0
    assert_nothing_attached(running_target, target_app, "slow_op")


@pytest.mark.parametrize("output", ["console", "json"])
def test_closed_stdout_exits_within_a_second_detached(tool, target_app, running_target, output):
    """`funclatency -i 0.2 ... | head -n 1`: the next write fails (SIGPIPE is
    ignored, EPIPE stops the run)."""
    args = [str(tool), "-i", "0.2", f"{target_app}:slow_op"]
    if output == "json":
        args.insert(1, "--json")
    traced = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = traced.stdout.readline()
        assert first, "no first line"
        assert_breakpoint_present(running_target, target_app, "slow_op")
        closed = time.monotonic()
        traced.stdout.close()
        code = traced.wait(EXIT_TIMEOUT)
        took = time.monotonic() - closed
    finally:
        if traced.poll() is None:
            traced.kill()
            traced.wait()
    stderr = traced.stderr.read().decode()
    assert code == 0, f"exit {code}: {stderr}"
    assert took <= STOP_WITHIN, f"took {took:.2f}s to exit after stdout closed"
    assert_nothing_attached(running_target, target_app, "slow_op")


# --- Other tracers on the same function -------------------------------------------------


def test_two_instances_and_libbpf_tools_count_the_same(procs, tool, target_app):
    if shutil.which(LIBBPF_TOOLS_FUNCLATENCY) is None:
        pytest.fail(f"{LIBBPF_TOOLS_FUNCLATENCY} missing: scripts/setup installs libbpf-tools")
    calls = 400
    work = procs.start_workload(target_app, ["--calls", calls, "--threads", "2", "--seed", "5"])
    # System-wide: with -p it looks the binary up as a library and fails.
    peer = procs.spawn(["stdbuf", "-oL", LIBBPF_TOOLS_FUNCLATENCY, "-u",
                        f"{target_app}:slow_op"])
    peer.wait_for_line("stdout", r"^Tracing ", TOOL_ATTACH_TIMEOUT)
    ours = {mode: procs.start_tool(tool, ["--json", "--mode", mode, "-p", work.pid,
                                          f"{target_app}:slow_op"])
            for mode in ("events", "kernel")}
    work.start()
    truth = work.finish()
    assert truth.function("slow_op")["calls"] == calls
    for mode, traced in ours.items():
        assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
        record = total_record(traced, "slow_op")
        assert (record["mode"], record["count"], record["lost"]) == (mode, calls, 0), record
    assert peer.stop(signal.SIGINT) == 0, peer.describe()
    assert sum(rows_from_console(peer.lines("stdout")).values()) == calls, peer.describe()

"""--cpu-split: each call's on-CPU, runnable and blocked time, against what a
workload measured of its own calls (thread CPU time, the sleep it asked for
and the sleep it measured), alone and with busy threads on its CPU."""

import json

import pytest

from conftest import rows_from_json, totals_by_symbol, trace_workload, usec_row

# alone: under the parallel run (./scripts/test) one call's runnable time once
# came out below the bound its own clocks give; run by itself.
pytestmark = [pytest.mark.bpf, pytest.mark.alone]
MODES = ["events", "kernel"]
CALLS = 30
# The scheduler times a wait on the run queue with its run queue's clock, the
# tool with the switches' own timestamps: they differ by a few microseconds a
# switch, a bound on that per time the thread got the CPU back.
SWITCH_CLOCK_SLACK_NS = 20_000


def rows_list(rows: dict) -> list:
    """[row, row, ...], one per call, sorted, from {row: count}."""
    return sorted(row for row, count in rows.items() for _ in range(count))


def rows_between(tool_rows: dict, least: list, most: list, what: str):
    """Each call's row is within a row of its bounds from the truth: `least`
    and `most` hold one row per call the program made. Calls with an unknown
    split are missing from the tool's rows: the tool is compared with the
    truth rows that leave them out in the way most favourable to it (the
    lowest lower bounds, the highest upper bounds), all sorted."""
    tool = rows_list(tool_rows)
    least, most = sorted(least)[:len(tool)], sorted(most)[len(most) - len(tool):]
    too_low = [(t, lo) for t, lo in zip(tool, least) if t < lo - 1]
    too_high = [(t, hi) for t, hi in zip(tool, most) if t > hi + 1]
    assert not too_low and not too_high, (
        f"{what}: rows outside the truth's bounds, (tool, low): {too_low}, "
        f"(tool, high): {too_high}")


def parts_of(record: dict) -> str:
    return "; ".join(f"{part} rows {rows_from_json(record[part])}"
                     for part in ("oncpu", "runnable", "blocked"))


def slowest_calls(record: dict, calls: list) -> str:
    """For a failure's message: the tool's wall rows and, of the calls the
    program timed, the three with the most time outside their burn and sleep
    (the caller's wall clock less the burn's and the sleep's wall time)."""
    def outside(c):
        return c["wall_ns"] - c["burn_wall_ns"] - c["sleep_ns"]
    worst = sorted(calls, key=outside, reverse=True)[:3]
    return (f"wall rows {rows_from_json(record)}; calls with the most time outside the body's "
            f"burn and sleep: {[dict(c, outside_ns=outside(c)) for c in worst]}")


def longest_burn_waits(calls: list) -> str:
    """For a failure's message: the four calls that waited longest on the run
    queue during their burn, by the scheduler and by the burn's own clocks."""
    worst = sorted(calls, key=lambda c: c["burn_run_delay_ns"], reverse=True)[:4]
    return "longest burn waits (run_delay us, wall less CPU us, wall us): " + str(
        [(c["burn_run_delay_ns"] // 1000, (c["burn_wall_ns"] - c["burn_cpu_ns"]) // 1000,
          c["wall_ns"] // 1000) for c in worst])


def split_samples(truth_path) -> dict:
    return json.loads((truth_path.parent / (truth_path.name + ".split")).read_text())


@pytest.mark.parametrize("mode", MODES)
def test_cpu_split_matches_the_programs_own_clocks(procs, tool, workload, mode):
    program = workload("cpu_split")
    work = procs.start_workload(program, ["--calls", str(CALLS)])
    traced = procs.start_tool(tool, ["--json", "--cpu-split", "--mode", mode, "-p", work.pid,
                                     f"{program}:split_alone", f"{program}:split_contended"])
    work.start()
    truth = work.finish()
    assert traced.wait(30) == 0, traced.describe()
    totals = totals_by_symbol(traced.text("stdout"))
    samples = split_samples(work.truth_path)

    for symbol in ("split_alone", "split_contended"):
        record = totals[symbol]
        calls = samples[symbol]
        assert record["count"] == truth.function(symbol)["returned"] == len(calls) == CALLS
        # Some context switches never reach the sched_switch tracepoint (here
        # those away from some system threads): a thread handed the CPU back
        # by one is seen leaving and not coming back. After a preemption the
        # tool times that wait from the scheduler's run_delay; any other time
        # out it cannot time, and it says the call's split is unknown rather
        # than guess (as when the kernel counted a switch-out it did not see).
        unknown = record["split_unknown"]
        assert unknown <= CALLS // 10, f"{symbol}: {unknown} calls with an unknown split"
        for part in ("oncpu", "runnable", "blocked"):
            assert record[part]["count"] == CALLS - unknown, f"{symbol} {part}: {record[part]}"
        # wall = on-CPU + runnable + blocked, per call, so the sums add up
        # (exactly, when every call's split is known).
        parts_sum = sum(record[part]["sum_ns"] for part in ("oncpu", "runnable", "blocked"))
        if unknown == 0:
            assert abs(parts_sum - record["sum_ns"]) <= CALLS, (symbol, parts_sum, record["sum_ns"])
        else:
            assert parts_sum < record["sum_ns"], (symbol, parts_sum, record["sum_ns"])
        # On-CPU: at least the thread CPU time the body measured, at most the
        # call's wall time less the sleep it asked for (asleep, it cannot
        # run); within a row of those per call. Not at most its CPU clock:
        # time the hypervisor steals from the running thread is on the CPU
        # for the tool (no switch) and in neither clock (see runnable below).
        rows_between(rows_from_json(record["oncpu"]),
                     [usec_row(c["cpu_ns"] // 1000) for c in calls],
                     [usec_row(max(0, c["wall_ns"] - c["sleep_asked_ns"]) // 1000) for c in calls],
                     f"{symbol} on-CPU; {parts_of(record)}; {slowest_calls(record, calls)}")
        # Blocked: at least the sleep asked for, at most the sleep measured
        # (which also holds the wait for a CPU after the wakeup).
        blocked = rows_list(rows_from_json(record["blocked"]))
        low = min(usec_row(c["sleep_asked_ns"] // 1000) for c in calls)
        high = max(usec_row(c["sleep_ns"] // 1000) for c in calls)
        assert low - 1 <= blocked[0] and blocked[-1] <= high + 1, (symbol, blocked, low, high)
        assert record["lost"] == 0, record

        # Runnable (switched out while runnable): at least what the scheduler
        # says the thread waited on the run queue during the burn (run_delay;
        # the burn never sleeps, so all of it is preemption), at most the call's wall time
        # less its CPU time and the sleep asked for; within a row of those per
        # call. The burn's wall less its CPU time is no lower bound: on a
        # virtual machine the hypervisor steals time from a running thread
        # (the steal column of /proc/stat), which neither the thread's CPU
        # clock nor the run queue counts, and which the tool, seeing no
        # switch, rightly puts on the CPU (a call of split_alone once burned
        # 1.5 ms of CPU in 4 ms of wall, none of it runnable).
        rows_between(
            rows_from_json(record["runnable"]),
            [usec_row(max(0, c["burn_run_delay_ns"] - SWITCH_CLOCK_SLACK_NS * c["burn_arrivals"])
                      // 1000) for c in calls],
            [usec_row(max(0, c["wall_ns"] - c["cpu_ns"] - c["sleep_asked_ns"]) // 1000)
             for c in calls],
            f"{symbol} runnable; {parts_of(record)}; {longest_burn_waits(calls)}")

    alone, contended = totals["split_alone"], totals["split_contended"]
    waited = sum(c["burn_run_delay_ns"] for c in samples["split_contended"])
    # The scheduler saw the contention, and the tool sees more waiting for the
    # CPU with the busy threads than without (alone it is near zero on an
    # idle machine; the per-call bounds above hold on a busy one too).
    assert waited > 10_000_000, f"the busy threads took only {waited} ns from the burns"
    assert alone["runnable"]["sum_ns"] < contended["runnable"]["sum_ns"], (
        alone["runnable"], contended["runnable"])
    if contended["split_unknown"] == 0:
        assert 0.8 * waited <= contended["runnable"]["sum_ns"] <= 1.2 * waited + 1_000_000, (
            waited, contended["runnable"])


def test_cpu_split_without_the_flag_adds_nothing(procs, tool, workload):
    program = workload("cpu_split")
    totals, _ = trace_workload(procs, tool, program, ["split_alone"], "events", ["--calls", "3"])
    assert not {"oncpu", "runnable", "blocked"} & set(totals["split_alone"])

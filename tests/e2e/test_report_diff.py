"""`funclatency diff` on real runs of target-app. Identical settings: slow_op
(sleeps) shows "no significant change" in at least 18 of 20 repeated pairs
(the two runs of a pair side by side, as two jobs of one CI machine), and
for the CPU-bound fast_op and cet_op every "slower" or "faster" follows the
program's own clock (this VM runs a whole run of them up to ~35% slower
now and then, which target-app's --truth sees too); a pair judged unchanged
passes --fail-if-slower 20. In the same test, a run whose slow_op really is
1.5x slower is judged "slower" against one of those bases, so a diff that
never says anything cannot pass it. A slow_op made 1.5x slower (target-app
--slow-scale 1.5) is "slower" with the p50 ratio near 1.5, and
--fail-if-slower 20 exits 3 on it. Several runs a side, their JSON lines in
one file, are pooled. Both subcommands refuse malformed input with one
line, and run from their module (funclatency-offline.so), which a binary
without it names."""

import json
import shutil

import pytest

from conftest import EXIT_TIMEOUT, assert_refused, run_tool

SYMBOLS = ["slow_op", "fast_op", "cet_op"]
CALLS = 1000  # slow_op calls per run: ~1.7 s at full speed
INTERVAL = "0.2"  # ~8 intervals per run: the test's noise scale
PAIRS = 20


def record_runs(procs, tool, target_app, runs):
    """Runs target-app once per (out, seed, extra, calls) in `runs`, side by
    side, each from start to exit under its own `funclatency --json -i` with
    -p (only its process: others may run target-app too); writes each run's
    JSON lines to its `out`; returns [(out, target-app's own truth)]."""
    started = []
    for out, seed, extra, calls in runs:
        work = procs.start_workload(target_app, ["--calls", calls, "--seed", seed, *extra])
        traced = procs.start_tool(tool, ["--json", "-i", INTERVAL, "-p", work.pid,
                                         *[f"{target_app}:{s}" for s in SYMBOLS]])
        started.append((out, work, traced))
    for _, work, _ in started:
        work.start()
    recorded = []
    for out, work, traced in started:
        truth = work.finish()
        assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
        out.write_text(traced.text("stdout") + "\n")
        recorded.append((out, truth))
    return recorded


def record_run(procs, tool, target_app, out, seed, extra=(), calls=CALLS):
    """One run of record_runs: (out, target-app's own truth)."""
    return record_runs(procs, tool, target_app, [(out, seed, extra, calls)])[0]


def own_mean_ns(truth):
    """{function: mean ns of its undisturbed calls} as target-app measured
    them around each call (probe costs included, as the tracer sees them)."""
    return {name: f["undisturbed_sum_ns"] / f["undisturbed"] for name, f in truth.functions.items()}


def p50_bounds_of(own: dict) -> tuple:
    """Where funclatency's median of a function may lie, from the medians
    target-app kept: at least its bodies' (each call is no shorter than its
    body), at most its calls' as the caller timed them; widened by a fine
    bucket (1/16 of an octave: the tool reads the middle of the bucket that
    holds the median call) and by the microsecond the tool's unit floors."""
    return own["body_p50_ns"] * 15 / 16 - 1000, own["p50_ns"] * 17 / 16


def diff(tool, base, new, *args):
    result = run_tool(tool, ["diff", base, new, "--json", *args])
    assert result.returncode in (0, 3), result.stderr
    listed = json.loads(result.stdout)["functions"]
    by_symbol = {f["symbol"]: f for f in listed}
    assert len(by_symbol) == len(listed), f"a symbol listed twice: {result.stdout}"
    return result.returncode, by_symbol


def assert_follows_own_clock(verdict, own_ratio, where):
    """A verdict only where the program's own mean moved the same way, by 5%
    or more (the verdicts seen here came with moves of 25-35%; moves of up to
    13% were judged unchanged)."""
    if verdict == "slower":
        assert own_ratio > 1.05, where
    elif verdict == "faster":
        assert own_ratio < 1 / 1.05, where
    else:
        assert verdict == "no significant change", where


@pytest.mark.bpf
def test_identical_settings_change_nothing_the_programs_own_clock_does_not(procs, tool,
                                                                           target_app, tmp_path):
    slow_op_unchanged = 0
    seen = []
    for pair in range(PAIRS):
        # Same settings; each run draws its own sleeps (seed), as two runs of a build would.
        # The two run side by side, as two CI jobs on one machine: the same load for both.
        (base, base_truth), (new, new_truth) = record_runs(
            procs, tool, target_app, [(tmp_path / f"base{pair}.ndjson", 2 * pair + 1, (), CALLS),
                                      (tmp_path / f"new{pair}.ndjson", 2 * pair + 2, (), CALLS)])
        code, functions = diff(tool, base, new, "--fail-if-slower", "20")
        assert set(functions) == set(SYMBOLS), functions.keys()
        before, after = own_mean_ns(base_truth), own_mean_ns(new_truth)
        own_ratio = {s: after[s] / before[s] for s in SYMBOLS}
        seen.append({s: (f["verdict"], round(f["superiority"], 3), round(own_ratio[s], 3))
                     for s, f in functions.items()})
        where = f"pair {pair}: {seen[-1]} (verdict, A, the program's own mean new/base)"
        for symbol in ("fast_op", "cet_op"):
            assert_follows_own_clock(functions[symbol]["verdict"], own_ratio[symbol], where)
        if functions["slow_op"]["verdict"] == "no significant change":
            slow_op_unchanged += 1
        if all(f["verdict"] == "no significant change" for f in functions.values()):
            assert code == 0, f"--fail-if-slower 20 failed an unchanged pair: {where}"
    print("\n".join(map(str, seen)))
    assert slow_op_unchanged >= 18, "\n".join(map(str, seen))

    # The same diff must also see a real change: slow_op's sleeps 1.5x longer.
    # 300 calls (~1 s) suffice: against a base of 1000 that shift scored
    # p < 1e-10 in each of 5 tries, where "slower" needs p < 0.01 / 3.
    changed, _ = record_run(procs, tool, target_app, tmp_path / "changed.ndjson",
                            2 * PAIRS + 1, ["--slow-scale", "1.5"], 300)
    code, functions = diff(tool, tmp_path / "base0.ndjson", changed, "--fail-if-slower", "20")
    assert functions["slow_op"]["verdict"] == "slower", (
        f"slow_op 1.5x slower in the new run, but the diff says: {functions['slow_op']}")
    assert functions["slow_op"].get("gate_failed") and code == 3, (
        f"--fail-if-slower 20 passed a 1.5x slower slow_op (exit {code}): {functions['slow_op']}")


@pytest.mark.bpf
def test_slow_op_shifted_1_5x_is_slower_and_fails_the_gate(procs, tool, target_app, tmp_path):
    # One after the other: the p50 ratio is held to 1.5 +- 0.15, and three
    # target-apps side by side on two CPUs (fast_op and cet_op spin) made it
    # 1.25, each slow_op's wake-up waiting behind the others' spinning.
    base, base_truth = record_run(procs, tool, target_app, tmp_path / "base.ndjson", 11)
    same, same_truth = record_run(procs, tool, target_app, tmp_path / "same.ndjson", 12)
    slower, slower_truth = record_run(procs, tool, target_app, tmp_path / "slower.ndjson", 13,
                                      ["--slow-scale", "1.5"])
    code, functions = diff(tool, base, slower)
    slow = functions["slow_op"]
    assert code == 0
    assert slow["verdict"] == "slower", slow
    # Each side's mean lies between the mean of slow_op's bodies, as slow_op
    # timed them, and the mean its caller measured; so does the ratio. (The
    # p50 ratio was held to 1.5 +- 0.15 here: p50 is read inside a log2 row,
    # and a 1.5x cluster straddles 1024 us; it read 1.91 once on a busy VM.)
    side_bounds = {}
    for side, truth in (("base", base_truth), ("new", slower_truth)):
        own = truth.functions["slow_op"]
        assert own["timed_bodies"] == own["returned"] == slow[side]["count"], (side, own, slow)
        low, high = own["body_sum_ns"] / own["returned"], own["sum_ns"] / own["returned"]
        assert low <= slow[side]["mean_ns"] <= high, (side, low, high, slow)
        side_bounds[side] = (low, high)
    low = side_bounds["new"][0] / side_bounds["base"][1]
    high = side_bounds["new"][1] / side_bounds["base"][0]
    assert 1.3 < low <= slow["ratio"]["mean"] <= high, (low, high, slow)
    # The medians likewise, from the medians target-app kept of its bodies and
    # of its calls. (p50 > 1.2 was asserted here: under the parallel run
    # the base's median once came out 1.12x below the new one's, the tool
    # matching the program's own clocks.)
    p50_bounds = {side: p50_bounds_of(truth.functions["slow_op"])
                  for side, truth in (("base", base_truth), ("new", slower_truth))}
    for side, (low, high) in p50_bounds.items():
        assert low <= slow[side]["p50_ns"] <= high, (side, low, high, slow)
    low = p50_bounds["new"][0] / p50_bounds["base"][1]
    high = p50_bounds["new"][1] / p50_bounds["base"][0]
    assert 1 < low <= slow["ratio"]["p50"] <= high, (low, high, slow)
    # The untouched functions: nothing but what the program's own clock saw.
    before, after = own_mean_ns(base_truth), own_mean_ns(slower_truth)
    for symbol in ("fast_op", "cet_op"):
        assert_follows_own_clock(functions[symbol]["verdict"], after[symbol] / before[symbol],
                                 (symbol, functions[symbol], after[symbol] / before[symbol]))

    gated = run_tool(tool, ["diff", base, slower, "--fail-if-slower", "20"])
    assert gated.returncode == 3, gated.stdout + gated.stderr
    assert "FAILS --fail-if-slower" in gated.stdout and "slow_op" in gated.stdout, gated.stdout
    # The percentile can be chosen: the gate at p50 follows the p50 ratio the
    # diff printed (held to the program's medians above).
    at_p50 = run_tool(tool, ["diff", base, slower, "--fail-if-slower", "20@p50"]).returncode
    assert at_p50 == (3 if slow["ratio"]["p50"] > 1.2 else 0), (at_p50, slow["ratio"])
    # A bound above the change passes for slow_op. Another function fails it
    # only if it got that much slower too, as the machine's load can make it
    # (fast_op's p95 once went 12.5 -> 31.5 us, its own clock 1.3x slower on
    # the mean, with a sanitized build and another test run beside it).
    gated = run_tool(tool, ["diff", base, slower, "--fail-if-slower", "90"])
    failing = [line.split()[0] for line in gated.stdout.splitlines() if "FAILS" in line]
    assert "slow_op" not in failing, gated.stdout
    others_over = [s for s in ("fast_op", "cet_op")
                   if functions[s]["verdict"] == "slower" and functions[s]["ratio"]["p95"] > 1.9]
    assert sorted(failing) == others_over, (failing, others_over, gated.stdout)
    assert gated.returncode == (3 if others_over else 0), gated.stdout
    # The same settings pass the gate, unless the program's own clock ran slower.
    code, functions = diff(tool, base, same, "--fail-if-slower", "20")
    same_ratio = {s: own_mean_ns(same_truth)[s] / before[s] for s in SYMBOLS}
    for symbol, function in functions.items():
        if function.get("gate_failed"):
            assert symbol != "slow_op", function
            assert_follows_own_clock(function["verdict"], same_ratio[symbol], (symbol, function))
    assert code == (3 if any(f.get("gate_failed") for f in functions.values()) else 0)
    # Faster the other way round; the human table says it too.
    table = run_tool(tool, ["diff", slower, base])
    assert table.returncode == 0
    line = next(l for l in table.stdout.splitlines() if l.startswith("slow_op"))
    assert line.rstrip().endswith("faster"), table.stdout


@pytest.mark.bpf
def test_several_runs_per_side_in_one_file(procs, tool, target_app, tmp_path):
    """docs/report-and-diff.md: each side may be several runs, their JSON lines in one file;
    the diff pools their calls and intervals."""
    files, own = {}, {}
    recorded = {"base": [], "new": []}
    for base_seed, new_seed in ((21, 24), (22, 25), (23, 26)):  # a base and a new side by side
        base, new = record_runs(procs, tool, target_app,
                                [(tmp_path / f"base{base_seed}.ndjson", base_seed, (), CALLS),
                                 (tmp_path / f"new{new_seed}.ndjson", new_seed, (), CALLS)])
        recorded["base"].append(base)
        recorded["new"].append(new)
    for side, runs in recorded.items():
        files[side] = tmp_path / f"{side}.ndjson"
        files[side].write_text("".join(out.read_text() for out, _ in runs))
        own[side] = {s: sum(t.function(s)["undisturbed_sum_ns"] for _, t in runs) /
                     sum(t.function(s)["undisturbed"] for _, t in runs) for s in SYMBOLS}
    code, functions = diff(tool, files["base"], files["new"])
    assert code == 0
    for symbol, function in functions.items():
        calls = CALLS * (4 if symbol == "fast_op" else 1)  # target-app: 4 fast_op per slow_op
        for side in ("base", "new"):
            assert function[side]["count"] == 3 * calls, (side, function)
            records = [json.loads(line) for line in files[side].read_text().splitlines() if line]
            intervals = sum(r.get("type") == "interval" and r.get("symbol") == symbol
                            for r in records)
            assert function[side]["intervals"] == intervals, (side, function)
    assert functions["slow_op"]["verdict"] == "no significant change", functions["slow_op"]
    for symbol in ("fast_op", "cet_op"):
        assert_follows_own_clock(functions[symbol]["verdict"],
                                 own["new"][symbol] / own["base"][symbol], functions[symbol])


GOOD = ('{"type":"interval","time":"2026-01-01T00:00:00.000000Z","symbol":"f","binary":"/b",'
        '"mode":"events","count":2,"sum_ns":6000,"min_ns":2500,"max_ns":3500,'
        '"log2_buckets":[[2000,3999,2]],"lost":0}')


@pytest.mark.parametrize("text, line, pattern", [
    (GOOD + "\n" + GOOD[:40], 2, r"truncated"),
    ("Tracing 1 function...\n", 1, r"not JSON"),
    (GOOD + "\n" + GOOD.replace('"count":2', '"count":3'), 2, r"log2_buckets hold 2"),
    (GOOD.replace('"symbol":"f",', ""), 1, r'no "symbol"'),
    (GOOD.replace("[[2000,3999,2]]", "[[2000,3000,2]]"), 1, r"not log2 rows"),
])
def test_malformed_input_is_refused_with_file_and_line(tool, tmp_path, text, line, pattern):
    bad = tmp_path / "bad.ndjson"
    bad.write_text(text)
    good = tmp_path / "good.ndjson"
    good.write_text(GOOD + "\n")
    for args in (["report", bad, "-o", tmp_path / "out.html"], ["diff", good, bad],
                 ["diff", bad, good]):
        assert_refused(run_tool(tool, args), rf"bad\.ndjson:{line}: ", pattern)
    assert not (tmp_path / "out.html").exists()


def test_missing_file_and_bad_gate_are_refused(tool, tmp_path):
    good = tmp_path / "good.ndjson"
    good.write_text(GOOD + "\n")
    assert_refused(run_tool(tool, ["report", tmp_path / "none.ndjson"]), r"none\.ndjson")
    assert_refused(run_tool(tool, ["diff", good, good, "--fail-if-slower", "x@p95"]),
                   r"not a percentage")
    assert_refused(run_tool(tool, ["diff", good, good, "--fail-if-slower", "10@p90"]),
                   r"unknown percentile")
    assert_refused(run_tool(tool, ["diff", good]), r"NEW")
    empty = tmp_path / "empty.ndjson"
    empty.write_text("\n")
    assert_refused(run_tool(tool, ["report", empty]), r"no interval or total records")


def test_help_teaches_both_subcommands(tool):
    text = run_tool(tool, ["--help"]).stdout
    assert "funclatency report RUN.ndjson" in text and "funclatency diff BASE.ndjson" in text
    assert "--fail-if-slower" in run_tool(tool, ["diff", "--help"]).stdout


def test_the_commands_run_from_their_module_and_name_it_when_missing(tool, tmp_path):
    """report and diff are a module beside the binary (the demo's build has
    the binary alone): a copy of the binary with no module next to it, nor
    in ../lib/funclatency, says which file is missing and where it looked."""
    assert (tool.parent / "funclatency-offline.so").is_file(), "a whole build makes the module"
    alone = tmp_path / "bin" / "funclatency"
    alone.parent.mkdir()
    shutil.copy2(tool, alone)
    good = tmp_path / "good.ndjson"
    good.write_text(GOOD + "\n")
    for args in (["report", good], ["diff", good, good]):
        result = run_tool(alone, args)
        assert result.returncode == 1, f"exit {result.returncode}: {result.stderr}"
        assert "funclatency-offline.so" in result.stderr and f"`funclatency {args[0]}`" in \
            result.stderr and str(alone.parent / "funclatency-offline.so") in result.stderr, \
            result.stderr
        assert result.stdout == ""
    # The same binary beside its module (as installed: ../lib/funclatency) works.
    lib = tmp_path / "lib" / "funclatency"
    lib.mkdir(parents=True)
    shutil.copy2(tool.parent / "funclatency-offline.so", lib)
    result = run_tool(alone, ["diff", good, good, "--json"])
    assert result.returncode == 0, result.stderr
    assert [f["symbol"] for f in json.loads(result.stdout)["functions"]] == ["f"]

"""`funclatency diff` on real runs of target-app: identical settings give "no
significant change" for every function in at least 18 of 20 repeated pairs; a
slow_op made 1.5x slower (target-app --slow-scale 1.5) is "slower" with the
p50 ratio near 1.5, and --fail-if-slower 20 exits 3 on it and 0 on an
identical pair. Both subcommands refuse malformed input with one line."""

import json

import pytest

from conftest import EXIT_TIMEOUT, assert_refused, run_tool

SYMBOLS = ["slow_op", "fast_op", "cet_op"]
CALLS = 1000  # slow_op calls per run: ~1.7 s at full speed
INTERVAL = "0.2"  # ~8 intervals per run: the test's noise scale
PAIRS = 20


def record_run(procs, tool, target_app, out, seed, extra=()):
    """Runs target-app from start to exit under `funclatency --json -i` with -p
    (only this process: others may run target-app too); writes the JSON lines."""
    work = procs.start_workload(target_app, ["--calls", CALLS, "--seed", seed, *extra])
    traced = procs.start_tool(tool, ["--json", "-i", INTERVAL, "-p", work.pid,
                                     *[f"{target_app}:{s}" for s in SYMBOLS]])
    work.start()
    work.finish()
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    out.write_text(traced.text("stdout") + "\n")
    return out


def diff(tool, base, new, *args):
    result = run_tool(tool, ["diff", base, new, "--json", *args])
    assert result.returncode in (0, 3), result.stderr
    listed = json.loads(result.stdout)["functions"]
    by_symbol = {f["symbol"]: f for f in listed}
    assert len(by_symbol) == len(listed), f"a symbol listed twice: {result.stdout}"
    return result.returncode, by_symbol


@pytest.mark.bpf
def test_identical_settings_show_no_significant_change_in_18_of_20_pairs(procs, tool, target_app,
                                                                          tmp_path):
    clean_pairs = 0
    seen = []
    for pair in range(PAIRS):
        # Same settings; each run draws its own sleeps (seed), as two runs of a build would.
        base = record_run(procs, tool, target_app, tmp_path / f"base{pair}.ndjson", 2 * pair + 1)
        new = record_run(procs, tool, target_app, tmp_path / f"new{pair}.ndjson", 2 * pair + 2)
        code, functions = diff(tool, base, new, "--fail-if-slower", "20")
        assert set(functions) == set(SYMBOLS), functions.keys()
        verdicts = {s: f["verdict"] for s, f in functions.items()}
        seen.append({s: (f["verdict"], round(f["p_value"], 4), round(f["superiority"], 3))
                     for s, f in functions.items()})
        if all(v == "no significant change" for v in verdicts.values()):
            clean_pairs += 1
            assert code == 0, f"--fail-if-slower 20 failed an identical pair: {functions}"
        if pair == 0:
            assert code == 0, seen[-1]
    print(f"identical pairs with no significant change: {clean_pairs}/{PAIRS}")
    print("\n".join(map(str, seen)))
    # Two runs of the same build are not the same run: on this 2-vCPU VM a
    # whole run of fast_op (a ~10 us function) now and then sits a little
    # faster or slower than the next (Vargha-Delaney A of 0.40 or 0.60 for one
    # pair of 20 in most runs, two in some; both directions; no mode switch,
    # no lost calls). The verdict is right to see it; the bound is 18 of 20.
    assert clean_pairs >= 18, "\n".join(map(str, seen))


@pytest.mark.bpf
def test_slow_op_shifted_1_5x_is_slower_and_fails_the_gate(procs, tool, target_app, tmp_path):
    base = record_run(procs, tool, target_app, tmp_path / "base.ndjson", 11)
    same = record_run(procs, tool, target_app, tmp_path / "same.ndjson", 12)
    slower = record_run(procs, tool, target_app, tmp_path / "slower.ndjson", 13,
                        ["--slow-scale", "1.5"])
    code, functions = diff(tool, base, slower)
    slow = functions["slow_op"]
    assert code == 0
    assert slow["verdict"] == "slower", slow
    assert abs(slow["ratio"]["p50"] - 1.5) <= 0.15, slow
    for symbol in ("fast_op", "cet_op"):
        assert functions[symbol]["verdict"] != "slower", functions[symbol]

    gated = run_tool(tool, ["diff", base, slower, "--fail-if-slower", "20"])
    assert gated.returncode == 3, gated.stdout + gated.stderr
    assert "FAILS --fail-if-slower" in gated.stdout and "slow_op" in gated.stdout, gated.stdout
    # The percentile can be chosen; p50 got 1.5x slower too.
    assert run_tool(tool, ["diff", base, slower, "--fail-if-slower", "20@p50"]).returncode == 3
    # A bound above the change passes.
    assert run_tool(tool, ["diff", base, slower, "--fail-if-slower", "90"]).returncode == 0
    assert run_tool(tool, ["diff", base, same, "--fail-if-slower", "20"]).returncode == 0
    # Faster the other way round; the human table says it too.
    table = run_tool(tool, ["diff", slower, base])
    assert table.returncode == 0
    line = next(l for l in table.stdout.splitlines() if l.startswith("slow_op"))
    assert line.rstrip().endswith("faster"), table.stdout


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

"""Rust programs by their Rust names: functions named and shown as Rust paths
in both manglings (legacy, whose names end in a hash, and v0, whose names
carry generic arguments), the two instantiations of one generic told apart,
and calls a panic unwinds through counted lost, as C++ exceptions are.

The traced program is tests/programs/rust (rust-workload, built by Debian's
rustc in three variants: legacy mangling, v0 mangling, and panic=abort); it
reports its own ground truth, naming each function by the path it knows
itself by (module_path!, std::any::type_name). Every traced function times
its own body, so each call's log2 row is bounded: no lower than its body's,
no higher than what its caller measured around the call.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request

import pytest

from conftest import (EXIT_TIMEOUT, assert_nothing_attached, build_dir, built, free_port,
                      record_problems, run_tool, totals_by_symbol, wait_until)

MODES = ["events", "kernel"]
VARIANTS = ["rust-workload", "rust-workload-v0"]
HANDLER = "workload::handler"
PROCESS = f"{HANDLER}::process"
RISKY = f"{HANDLER}::risky"
GENERIC_U64 = f"{HANDLER}::generic::<u64>"
GENERIC_STR = f"{HANDLER}::generic::<&str>"
# A legacy name of the generic, told apart from the other instantiation by its hash.
LEGACY_GENERIC = re.compile(rf"^{HANDLER}::generic::h[0-9a-f]{{16}}$")
# What the program's own run must show (its defaults): calls returned, abandoned.
EXPECTED_CALLS = {
    PROCESS: (200, 0),
    GENERIC_U64: (150, 0),
    GENERIC_STR: (100, 0),
    RISKY: (80, 40),  # every third call panics inside it, caught by catch_unwind
}


@pytest.fixture(scope="session")
def rust_program(worker_copy):
    """rust_program("rust-workload-v0") -> its path (target rust-programs,
    which CMake skips when it finds no rustc: scripts/setup installs it)."""
    return lambda name: worker_copy(
        built(build_dir() / "tests" / "programs" / name, "rust-programs"))


def symbols_named(binary, fragment):
    """The raw symbol names (nm) of `binary` that contain `fragment`."""
    out = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    return sorted({line.split()[-1] for line in out.splitlines() if fragment in line})


def tool_names_for_truth(totals, truth):
    """{truth name: the tool's total record}: by name, except the legacy
    generic's two records, named by their hashes, which are matched to the
    truth's instantiations by their call counts (150 and 100)."""
    matched = {}
    legacy = {name: record for name, record in totals.items() if LEGACY_GENERIC.match(name)}
    for name in EXPECTED_CALLS:
        if name in totals:
            matched[name] = totals[name]
    if legacy:
        by_count = {record["count"]: record for record in legacy.values()}
        for name in (GENERIC_U64, GENERIC_STR):
            matched[name] = by_count.get(truth.function(name)["returned"])
    return matched


def test_program_reports_its_truth_untraced(procs, rust_program):
    for variant in VARIANTS:
        work = procs.start_workload(rust_program(variant), wait_signal=False)
        truth = work.finish(timeout=60.0)
        for name, (returned, abandoned) in EXPECTED_CALLS.items():
            fn = truth.function(name)
            assert (fn["returned"], fn["abandoned"]) == (returned, abandoned), (variant, fn)
            assert sum(r["count"] for r in fn["log2_usec"]) == returned


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_rust_calls_match_ground_truth(procs, tool, rust_program, variant, mode):
    program = rust_program(variant)
    work = procs.start_workload(program)
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-v", "-p", work.pid,
                                     f"{program}:{HANDLER}::*"])
    work.start()
    truth = work.finish()
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency exited with {code} after the -p process did\n{traced.describe()}"
    totals = totals_by_symbol(traced.text("stdout"))
    if variant == "rust-workload-v0":
        # The generic's instantiations under their own names, nothing else.
        assert set(totals) == set(EXPECTED_CALLS), sorted(totals)
    else:
        legacy = sorted(name for name in totals if LEGACY_GENERIC.match(name))
        assert len(legacy) == 2 and legacy[0] != legacy[1], sorted(totals)
        assert set(totals) == {PROCESS, RISKY, *legacy}, sorted(totals)
    matched = tool_names_for_truth(totals, truth)
    problems = []
    for name in EXPECTED_CALLS:
        record = matched.get(name)
        if record is None:
            problems.append(f"{name}: no total record (tool: {sorted(totals)})")
            continue
        if record["mode"] != mode:
            problems.append(f"{name}: mode {record['mode']}, asked for {mode}")
        problems += [f"{name}: {p}" for p in record_problems(record, truth.function(name))]
    assert not problems, "\n".join(problems) + f"\n{traced.describe()}"
    # A panic unwinds through risky: its exit must be a probe on its ret
    # instructions, since a uretprobe's trampoline has no unwind info.
    exits = [line for line in traced.lines("stderr") if line.startswith(f"funclatency: {RISKY}:")]
    assert exits and "exception-safe" in exits[0], traced.describe()


@pytest.mark.bpf
def test_return_probe_breaks_a_panic_through_it(procs, tool, rust_program):
    """What the ret-instruction probes avoid: with --exit-probes uretprobe, the
    panic cannot unwind through risky's frame and the process dies."""
    program = rust_program("rust-workload")
    work = procs.start_workload(program)
    procs.start_tool(tool, ["--exit-probes", "uretprobe", "-p", work.pid, f"{program}:{RISKY}"])
    work.start()
    code = work.process.wait(60.0)
    assert code not in (0, None), work.process.describe()
    assert "failed to initiate panic" in work.process.text("stderr"), work.process.describe()


@pytest.mark.parametrize("variant", VARIANTS)
def test_list_names_rust_paths(tool, rust_program, variant):
    program = rust_program(variant)

    def listed(pattern):
        result = run_tool(tool, ["-l", f"{program}:{pattern}"])
        assert result.returncode == 0, result.stderr
        return [line.split()[0] for line in result.stdout.splitlines()[1:]]

    names = listed(f"{HANDLER}::*")
    if variant == "rust-workload-v0":
        assert sorted(names) == sorted([PROCESS, GENERIC_STR, GENERIC_U64, RISKY]), names
    else:
        generics = [name for name in names if LEGACY_GENERIC.match(name)]
        assert len(generics) == 2 and generics[0] != generics[1], names
        assert sorted(names) == sorted([PROCESS, RISKY, *generics]), names
        # The name with the hash is a name too: it picks one instantiation,
        # shown as named (two targets naming one each are two series apart).
        assert listed(generics[0]) == [generics[0]]
    assert listed("*::process") == [PROCESS]
    assert listed(PROCESS) == [PROCESS]
    assert len(listed(f"{HANDLER}::generic")) == 2
    # No hash to type, and a near miss names the Rust path.
    result = run_tool(tool, [f"{program}:{HANDLER}::proces"])
    assert result.returncode == 2
    assert f"did you mean: {PROCESS}" in result.stderr, result.stderr


def test_stripped_rust_binary_is_named_from_its_debug_file(tool, rust_program, tmp_path):
    """A stripped Rust executable keeps no symbol of its own (its .dynsym
    lists what it imports); its debug file, found as for C (.gnu_debuglink
    or build-id), gives the names back."""
    program = tmp_path / "server"
    shutil.copy2(rust_program("rust-workload-v0"), program)
    debug = tmp_path / "server.debug"
    subprocess.run(["objcopy", "--only-keep-debug", program, debug], check=True, timeout=60)
    subprocess.run(["strip", program], check=True, timeout=60)
    result = run_tool(tool, ["-l", f"{program}:{HANDLER}::*"])
    assert result.returncode == 2 and "stripped" in result.stderr, result.stderr
    subprocess.run(["objcopy", f"--add-gnu-debuglink={debug.name}", program.name], check=True,
                   cwd=tmp_path, timeout=60)
    result = run_tool(tool, ["-l", f"{program}:{HANDLER}::*"])
    assert result.returncode == 0, result.stderr
    names = sorted(line.split()[0] for line in result.stdout.splitlines()[1:])
    assert names == sorted([PROCESS, GENERIC_STR, GENERIC_U64, RISKY]), result.stdout


def http_get(url, timeout=5.0):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


@pytest.fixture(scope="session")
def receiver_program():
    return built(build_dir() / "tests" / "programs" / "otlp-receiver", "otlp-receiver")


@pytest.mark.bpf
def test_outputs_carry_rust_names(procs, tool, rust_program, receiver_program):
    """JSON (above), console (the slowest calls' stacks too), Prometheus
    /metrics and OTLP: the v0 generic's instantiations under their Rust names."""
    program = rust_program("rust-workload-v0")
    receiver = procs.spawn([receiver_program])
    ports = json.loads(receiver.wait_for_line("stdout", r'^\{"listening"', 10.0))["listening"]
    endpoint = f"127.0.0.1:{free_port()}"
    work = procs.start_workload(program)
    # Not -p: the tool (and /metrics) stays when the program has exited.
    traced = procs.start_tool(tool, [
        "--slowest", "1", "--prometheus", endpoint,
        f"--otlp=http://127.0.0.1:{ports['http']}/v1/metrics",
        f"{program}:{HANDLER}::generic"])
    work.start()
    work.finish()
    count_line = f'ebpf_function_latency_ms_count{{symbol="{GENERIC_STR}",binary="{program}"}} 100'
    assert wait_until(lambda: count_line in http_get(f"http://{endpoint}/metrics"), 10.0,
                      interval=0.2), http_get(f"http://{endpoint}/metrics")
    exposition = http_get(f"http://{endpoint}/metrics")
    assert f'ebpf_function_latency_ms_count{{symbol="{GENERIC_U64}",binary="{program}"}} 150' \
        in exposition, exposition
    # promtool parses it (exit 3: lint findings only, the mandated "ms" among them).
    lint = subprocess.run(["promtool", "check", "metrics"], input=exposition, capture_output=True,
                          text=True, timeout=30)
    assert lint.returncode in (0, 3), lint.stderr
    assert all("abbreviated units" in line for line in lint.stdout.splitlines() if line.strip()), \
        lint.stdout
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    # The console's report names both.
    console = traced.text("stdout")
    assert GENERIC_U64 in console and GENERIC_STR in console, console
    # So do the slowest calls' stacks, frame by frame (the caller too).
    assert re.search(rf"^\s+{re.escape(GENERIC_STR)}\+0x[0-9a-f]+ ", console, re.M), console
    assert re.search(r"^\s+workload::main\+0x[0-9a-f]+ ", console, re.M), console

    def exported_symbols():
        symbols = set()
        for line in receiver.lines("stdout"):
            record = json.loads(line)
            if "request" not in record:
                continue
            for resource in record["request"]["resource_metrics"]:
                for scope in resource["scope_metrics"]:
                    for metric in scope["metrics"]:
                        for kind in ("histogram", "exponential_histogram", "sum"):
                            for point in metric.get(kind, {}).get("data_points", []):
                                for item in point.get("attributes", []):
                                    if item["key"] == "symbol":
                                        symbols.add(item["value"]["string_value"])
        return symbols

    assert wait_until(lambda: {GENERIC_U64, GENERIC_STR} <= exported_symbols(), 10.0), \
        receiver.describe()


@pytest.mark.bpf
def test_panic_abort_ends_with_nothing_attached(procs, tool, rust_program):
    """A panic=abort program ends at its panic (SIGABRT) with a call in
    flight: the tool counts it lost, exits by itself, and leaves no probe in
    another process running the same file."""
    program = rust_program("rust-workload-abort")
    bystander = procs.start_workload(program, ["--scenario", "abort"])  # never started
    work = procs.start_workload(program, ["--scenario", "abort"])
    traced = procs.start_tool(tool, ["--json", "-p", work.pid, f"{program}:{HANDLER}::*"])
    work.start()
    code = work.process.wait(60.0)
    assert code == -signal.SIGABRT, work.process.describe()
    truth = json.loads(work.truth_path.read_text())
    assert traced.wait(EXIT_TIMEOUT) == 0, traced.describe()
    totals = totals_by_symbol(traced.text("stdout"))
    expected = {fn["name"]: fn for fn in truth["functions"]}
    assert (totals[PROCESS]["count"], totals[PROCESS]["lost"]) == \
        (expected[PROCESS]["returned"], 0), totals[PROCESS]
    assert (totals[RISKY]["count"], totals[RISKY]["lost"]) == (0, expected[RISKY]["abandoned"]), \
        totals[RISKY]
    raw = symbols_named(program, "7handler7process") + symbols_named(program, "7handler5risky")
    assert len(raw) == 2, raw
    assert_nothing_attached(bystander, program, *raw)
    os.kill(bystander.pid, signal.SIGKILL)

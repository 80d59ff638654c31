"""Naming functions every way a user would: libraries by name and
path, with and without -p, PIE and non-PIE, a stripped binary with a
.gnu_debuglink debug file, C++ demangled globs and mangled names, libc, a
pattern over 250 functions (per function and --merge), endbr64-first
functions, -l, and bad input refused with nothing attached.

The programs are in tests/programs/naming; each reports its own ground truth.
"""

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, assert_nothing_attached, assert_refused,
                      assert_rows_match_truth, build_dir, built, function_bytes_in_file,
                      function_file_offset, parse_json_records, rows_from_json, run_tool,
                      total_records, totals_by_symbol)

MODES = ["events", "kernel"]
GENERATED = [f"gen_fn_{i:03d}" for i in range(250)]
ENDBR64 = bytes.fromhex("f30f1efa")
# How much shorter than the program's own measurement a call may look to the
# tool: the cost of the probes inside the measured interval (single-stepped
# ret probes, ~10-20 us here), with room for a machine busy with builds (44 us
# seen). A sanity bound, not a timing test: the row checks are the exact ones.
PROBE_COST_BOUND_US = 150


@pytest.fixture(scope="session")
def naming():
    """naming("naming-app") -> path of tests/programs/naming/naming-app."""

    def path(name):
        return built(build_dir() / "tests" / "programs" / "naming" / name, "naming-programs")

    return path


def library_path_in(pid: int, file_name: str) -> str:
    """The path of the mapped file called `file_name` in process `pid`."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and os.path.basename(parts[5]) == file_name:
            return os.path.realpath(parts[5])
    raise AssertionError(f"{file_name} is not mapped in process {pid}")


def run_traced(procs, tool, program, tool_args, workload_args=()):
    """Starts `program` waiting for SIGUSR1, attaches `funclatency --json -p PID
    *tool_args`, runs the program to its exit; returns (records, truth,
    tool process). The tool must exit 0 by itself when the process does."""
    work = procs.start_workload(program, workload_args)
    traced = procs.start_tool(tool, ["--json", "-p", work.pid, *tool_args])
    work.start()
    truth = work.finish()
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency exit {code}\n{traced.describe()}"
    return parse_json_records(traced.text("stdout")), truth, traced, work


def run_traced_without_pid(procs, command, program, workload_args=()):
    """Starts `command` (funclatency --json without -p, or a launcher of it)
    first, then runs `program` to its exit and stops the tool with SIGINT."""
    traced = procs.start_tool(command[0], command[1:])
    work = procs.start_workload(program, workload_args)
    work.start()
    truth = work.finish()
    code = traced.stop(signal.SIGINT)
    assert code == 0, f"funclatency exit {code}\n{traced.describe()}"
    return totals_by_symbol(traced.text("stdout")), truth, traced


def assert_counts(totals, truth, expected_symbols):
    """Every symbol's total count equals the truth's calls, nothing lost."""
    problems = []
    for symbol, truth_name in expected_symbols.items():
        record = totals.get(symbol)
        calls = truth.function(truth_name)["calls"]
        if record is None:
            problems.append(f"{symbol}: no record (records: {sorted(totals)[:10]})")
        elif (record["count"], record["lost"]) != (calls, 0):
            problems.append(f"{symbol}: count {record['count']} lost {record['lost']}, truth "
                            f"{calls} calls")
    assert not problems, "\n".join(problems)


# --- Libraries by name, with -p; several targets at once ----------------------


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_binary_library_and_libc_names_in_one_run(procs, tool, naming, mode):
    """:FUNCTION, lib:FUNCTION and libc by two spellings, all in one run."""
    records, truth, _, _ = run_traced(
        procs, tool, naming("naming-app"),
        ["--mode", mode, ":app_local_op", "naming:naming_lib_op", "c:getppid", "libc:l64a"])
    totals = total_records(records)
    assert set(totals) == {"app_local_op", "naming_lib_op", "getppid", "l64a"}, totals.keys()
    assert_counts(totals, truth, {s: s for s in totals})
    assert truth.function("getppid")["calls"] == 200
    for record in totals.values():
        assert record["mode"] == mode
    assert totals["app_local_op"]["binary"] == os.path.realpath(naming("naming-app"))
    assert totals["naming_lib_op"]["binary"] == os.path.realpath(naming("libnaming.so"))
    assert os.path.basename(totals["getppid"]["binary"]) == "libc.so.6"
    assert totals["getppid"]["binary"] == totals["l64a"]["binary"]


@pytest.mark.bpf
def test_full_library_file_names_with_pid(procs, tool, naming):
    records, truth, _, _ = run_traced(
        procs, tool, naming("naming-app"),
        ["libnaming.so:naming_lib_op", "libc.so.6:getppid", f"{naming('naming-app')}:app_local_op"],
        ["--calls", "150"])
    totals = total_records(records)
    assert_counts(totals, truth,
                  {"naming_lib_op": "naming_lib_op", "getppid": "getppid",
                   "app_local_op": "app_local_op"})
    assert totals["getppid"]["count"] == 150


# --- Without -p: library by path, libc from the loader cache, a library found
# in a standard directory ----------------------------------------------------------


@pytest.mark.bpf
def test_library_path_and_libc_without_pid(procs, tool, naming):
    # l64a: nothing else on this machine calls it, so all processes' calls
    # are the program's.
    totals, truth, _ = run_traced_without_pid(
        procs, [tool, "--json", f"{naming('libnaming.so')}:naming_lib_op", "c:l64a"],
        naming("naming-app"), ["--calls", "120"])
    assert_counts(totals, truth, {"naming_lib_op": "naming_lib_op", "l64a": "l64a"})
    assert totals["l64a"]["count"] == 120


@pytest.mark.bpf
def test_library_name_without_pid_found_in_standard_directory(procs, tool, naming, tmp_path):
    """naming:FUNCTION without -p resolves from the standard directories. The
    tool runs in a private mount namespace whose /usr/lib64 holds a hard link
    of libnaming.so (same inode, so its probes fire in the program that
    loads the library from the build directory)."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1)")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a mount namespace: {probe.stderr.strip()}")
    lib_dir = tmp_path / "lib64"
    lib_dir.mkdir()
    try:
        os.link(naming("libnaming.so"), lib_dir / "libnaming.so")
    except OSError as error:
        pytest.skip(f"cannot hard-link libnaming.so into {lib_dir}: {error}")
    loader = "ld-linux-x86-64.so.2"
    os.symlink(os.path.realpath(f"/usr/lib64/{loader}"), lib_dir / loader)
    script = f'mount --bind "$1" /usr/lib64 && shift && exec "$@"'
    command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
               lib_dir, tool, "--json", "naming:naming_lib_op"]
    totals, truth, _ = run_traced_without_pid(procs, command, naming("naming-app"),
                                              ["--calls", "80"])
    assert_counts(totals, truth, {"naming_lib_op": "naming_lib_op"})
    assert totals["naming_lib_op"]["binary"] == "/usr/lib64/libnaming.so"


# --- PIE, non-PIE, stripped with a debug link -------------------------------------


@pytest.mark.bpf
@pytest.mark.parametrize("program", ["naming-app", "naming-app-nopie"])
def test_pie_and_non_pie(procs, tool, naming, program):
    binary = naming(program)
    elf_type = subprocess.run(["readelf", "-h", binary], capture_output=True, text=True,
                              check=True).stdout
    assert ("DYN" in elf_type) == (program == "naming-app"), elf_type
    records, truth, _, _ = run_traced(procs, tool, binary, [f"{binary}:app_local_op"],
                                      ["--calls", "100"])
    totals = total_records(records)
    assert_counts(totals, truth, {"app_local_op": "app_local_op"})


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_stripped_binary_with_debuglink(procs, tool, naming, mode):
    stripped = naming("naming-app-stripped")
    sections = subprocess.run(["readelf", "-SW", stripped], capture_output=True, text=True,
                              check=True).stdout
    assert ".gnu_debuglink" in sections and ".symtab" not in sections, sections
    records, truth, _, _ = run_traced(procs, tool, stripped,
                                      ["--mode", mode, f"{stripped}:app_local_op"],
                                      ["--calls", "100"])
    totals = total_records(records)
    assert_counts(totals, truth, {"app_local_op": "app_local_op"})
    assert totals["app_local_op"]["binary"] == str(stripped)


def test_stripped_binary_without_its_debug_file_has_no_local_symbols(tool, naming, tmp_path):
    """Proves the debug file is where the symbol came from."""
    alone = tmp_path / "naming-app-stripped"
    shutil.copy(naming("naming-app-stripped"), alone)
    result = run_tool(tool, ["-l", f"{alone}:app_local_op"])
    assert result.returncode == 2, result
    assert "app_local_op" in result.stderr


# --- C++ ------------------------------------------------------------------------


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_cxx_demangled_globs_and_mangled_names(procs, tool, naming, mode):
    binary = naming("naming-cxx")
    records, truth, _, _ = run_traced(
        procs, tool, binary,
        ["--mode", mode, f"{binary}:naming::Shape::area*",
         f"{binary}:_ZNK6naming5Shape9perimeterEv", f"{binary}:naming::scale*"],
        ["--calls", "60"])
    totals = total_records(records)
    names = sorted(totals)
    # Demangled names are printed; both area overloads match the glob.
    assert any(n.startswith("naming::Shape::area(int)") for n in names), names
    assert any(n.startswith("naming::Shape::area(double)") for n in names), names
    assert any("naming::Shape::perimeter()" in n for n in names), names
    assert any("naming::scale<int>(int)" in n for n in names), names
    assert len(names) == 4, names
    counts = {}
    for name, record in totals.items():
        assert record["lost"] == 0, record
        key = next(t for t in ("area(int)", "area(double)", "perimeter", "scale") if t in name)
        counts[key] = record["count"]
    truth_calls = {key: truth.function(name)["calls"] for key, name in (
        ("area(int)", "naming::Shape::area(int) const"),
        ("area(double)", "naming::Shape::area(double) const"),
        ("perimeter", "naming::Shape::perimeter() const"),
        ("scale", "int naming::scale<int>(int)"))}
    assert counts == truth_calls == {"area(int)": 60, "area(double)": 120, "perimeter": 180,
                                     "scale": 60}


# --- 250 functions ------------------------------------------------------------------


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_pattern_over_250_functions(procs, tool, naming, mode):
    binary = naming("naming-many")
    # kernel mode also shows that --max-functions raises the limit to exactly enough.
    limit = ["--max-functions", "250"] if mode == "kernel" else []
    records, truth, traced, _ = run_traced(procs, tool, binary,
                                           ["--mode", mode, *limit, f"{binary}:gen_fn_*"],
                                           ["--calls", "2"])
    assert re.search(r"Tracing 250 functions", traced.text("stderr")), traced.text("stderr")
    totals = total_records(records)
    assert sorted(totals) == GENERATED
    wrong = {}
    for index, symbol in enumerate(GENERATED):
        expected = truth.function(symbol)["calls"]
        assert expected == 2 * (index % 5 + 1)
        if (totals[symbol]["count"], totals[symbol]["lost"]) != (expected, 0):
            wrong[symbol] = (totals[symbol]["count"], totals[symbol]["lost"], expected)
    assert not wrong, f"(count, lost, truth) per function: {wrong}"


@pytest.mark.bpf
def test_merge_folds_250_functions_into_one_record(procs, tool, naming):
    binary = naming("naming-many")
    records, truth, _, _ = run_traced(procs, tool, binary, ["--merge", f"{binary}:gen_fn_*"],
                                      ["--calls", "2"])
    totals = [r for r in records if r["type"] == "total"]
    assert len(totals) == 1, [r["symbol"] for r in totals]
    expected = sum(truth.function(symbol)["calls"] for symbol in GENERATED)
    assert expected == 2 * 50 * (1 + 2 + 3 + 4 + 5)
    assert totals[0]["count"] == expected
    assert totals[0]["lost"] == 0
    assert sum(count for _, _, count in totals[0]["log2_buckets"]) == expected


def test_regex_lists_what_it_matches(tool, naming):
    binary = naming("naming-many")
    result = run_tool(tool, ["-l", "-r", f"{binary}:^gen_f[nx]_(1[0-4][0-9]|decoy)$"])
    assert result.returncode == 0, result
    listed = [entry[0] for entry in parse_listing(result.stdout)]
    assert sorted(listed) == sorted([f"gen_fn_{i}" for i in range(100, 150)] + ["gen_fx_decoy"])


# --- endbr64-first functions --------------------------------------------------------


def verbose_entry_lines(stderr: str) -> dict:
    """{symbol: (offset, skip or 0)} from -v's `NAME: entry probe at FILE:0xOFF ...`."""
    entries = {}
    for match in re.finditer(r"(\S+): entry probe at (\S+):0x([0-9a-f]+)( \(after endbr64, "
                             r"\+(\d+)\))?; exit: ", stderr):
        entries[match.group(1)] = (int(match.group(3), 16), int(match.group(5) or 0))
    return entries


def jumps_to_after_endbr64(binary: Path, symbol: str) -> bool:
    """True when the function's code has a jump to its own start + 4."""
    disassembly = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={symbol}",
                                  binary], capture_output=True, text=True, check=True).stdout
    return re.search(rf"\bj\w+\s+[0-9a-f]+ <{symbol}\+0x4>", disassembly) is not None


@pytest.mark.bpf
@pytest.mark.parametrize("mode", MODES)
def test_endbr64_functions(procs, tool, naming, mode):
    binary = naming("naming-cet")
    symbols = ["cet_leaf", "cet_recurse", "cet_throw_through", "cet_walk"]
    for symbol in symbols:
        assert function_bytes_in_file(binary, symbol, 4) == ENDBR64, f"{symbol}: no endbr64"
    assert jumps_to_after_endbr64(binary, "cet_walk"), "gcc did not loop to cet_walk+4"
    calls, abandoned = 40, 10
    records, truth, traced, _ = run_traced(
        procs, tool, binary, ["-v", "--mode", mode, *[f"{binary}:{s}" for s in symbols]],
        ["--calls", str(calls), "--abandon", str(abandoned)])
    totals = total_records(records)

    # Where the entry probes went: after the endbr64, except where the
    # function itself jumps there.
    entries = verbose_entry_lines(traced.text("stderr"))
    for symbol in symbols:
        start = function_file_offset(binary, symbol)
        want = (start, 0) if symbol == "cet_walk" else (start + 4, 4)
        assert entries.get(symbol) == want, (f"{symbol}: -v says {entries.get(symbol)}, want "
                                             f"{want}\n{traced.text('stderr')}")

    problems = []

    def check(symbol, count, lost):
        got = (totals[symbol]["count"], totals[symbol]["lost"])
        if got != (count, lost):
            problems.append(f"{symbol}: (count, lost) {got}, truth {(count, lost)}")

    leaf = truth.function("cet_leaf")
    check("cet_leaf", leaf["calls"], 0)
    assert leaf["calls"] == calls
    recurse = truth.function("cet_recurse")
    check("cet_recurse", recurse["calls"], 0)
    assert recurse["calls"] == 4 * calls
    through = truth.function("cet_throw_through")
    check("cet_throw_through", through["returned"], through["abandoned"])
    assert (through["returned"], through["abandoned"]) == (calls, abandoned)
    # One count per real call, not one per node the loop visits.
    check("cet_walk", truth.function("cet_walk")["calls"], 0)
    assert truth.function("cet_walk")["calls"] == calls
    assert not problems, "\n".join(problems)

    for symbol in ("cet_leaf", "cet_recurse", "cet_throw_through"):
        assert_rows_match_truth(rows_from_json(totals[symbol]), truth.function(symbol),
                                f"{symbol} ({mode})")
    # Durations: the probes fire inside the interval the program measures, so
    # each call looks shorter by the probes' own cost (the ret probes of a
    # binary with exception tables are single-stepped: ~10 us), never longer.
    for symbol in ("cet_leaf", "cet_recurse"):
        missing_ns = truth.function(symbol)["sum_ns"] - totals[symbol]["sum_ns"]
        per_call_us = missing_ns / totals[symbol]["count"] / 1000
        assert 0 <= per_call_us <= PROBE_COST_BOUND_US, (
            f"{symbol}: the tool's sum is {per_call_us:.1f} us per call shorter than the truth's")


# --- -l -----------------------------------------------------------------------------

LISTING = re.compile(r"^(.*?)\s+0x([0-9a-f]{16})\s+(\d+)\s+(/\S+)")


def parse_listing(stdout: str):
    """[(symbol, address, size, binary)] from -l output (after its header)."""
    entries = []
    for line in stdout.splitlines():
        match = LISTING.match(line)
        if match:
            entries.append((match.group(1).strip(), int(match.group(2), 16), int(match.group(3)),
                            match.group(4)))
    return entries


def nm_symbols(binary: Path, demangle=False) -> dict:
    """{name: (address, size)} of defined functions, per nm -S."""
    out = subprocess.run(["nm", "-S", "--defined-only", *(["-C"] if demangle else []), binary],
                         capture_output=True, text=True, check=True).stdout
    symbols = {}
    for line in out.splitlines():
        match = re.match(r"^([0-9a-f]+) ([0-9a-f]+) [tTwW] (.+)$", line)
        if match:
            symbols[match.group(3)] = (int(match.group(1), 16), int(match.group(2), 16))
    return symbols


@pytest.mark.bpf
def test_list_prints_matches_and_attaches_nothing(procs, tool, naming):
    work = procs.start_workload(naming("naming-app"))  # waits for SIGUSR1: stays alive
    binary = naming("naming-app")
    nopie = naming("naming-app-nopie")
    result = run_tool(tool, ["-l", "-p", work.pid, ":app_*", f"{nopie}:app_local_op",
                             "naming:naming_lib_*", "c:getppid"])
    assert result.returncode == 0, result
    assert "Tracing" not in result.stderr
    entries = parse_listing(result.stdout)
    by_name = {}
    for symbol, address, size, path in entries:
        by_name.setdefault(symbol, []).append((address, size, path))
    assert sorted(by_name) == ["app_local_op", "getppid", "naming_lib_op", "naming_lib_unused"]
    expected = {(*nm_symbols(binary)["app_local_op"], os.path.realpath(binary)),
                (*nm_symbols(nopie)["app_local_op"], os.path.realpath(nopie))}
    assert set(by_name["app_local_op"]) == expected
    library = naming("libnaming.so")
    assert by_name["naming_lib_op"] == [(*nm_symbols(library)["naming_lib_op"],
                                         os.path.realpath(library))]
    libc = library_path_in(work.pid, "libc.so.6")
    assert by_name["getppid"][0][2] == libc
    assert_nothing_attached(work, binary, "app_local_op")


def test_list_cxx_names_demangled(tool, naming):
    binary = naming("naming-cxx")
    result = run_tool(tool, ["-l", f"{binary}:naming::Shape::*"])
    assert result.returncode == 0, result
    listed = {symbol: (address, size) for symbol, address, size, _ in parse_listing(result.stdout)}
    from_nm = nm_symbols(binary, demangle=True)
    want = {name: value for name, value in from_nm.items() if name.startswith("naming::Shape::")}
    assert len(want) == 3, from_nm
    assert listed == want


# --- Bad input: one line, exit 2, nothing attached ---------------------------------------


@pytest.fixture
def waiting_app(procs, naming):
    """naming-app waiting for SIGUSR1: alive, its functions never called."""
    return procs.start_workload(naming("naming-app"))


def refuse_after_good_target(tool, work, binary, bad_args, *patterns):
    """The good target comes first, so a tool that attached in order and
    failed late would have left a probe on app_local_op."""
    result = run_tool(tool, ["-p", work.pid, f"{binary}:app_local_op", *bad_args])
    assert_refused(result, *patterns)
    assert_nothing_attached(work, binary, "app_local_op")
    return result


@pytest.mark.bpf
def test_pattern_matching_nothing_suggests_close_names(tool, naming, waiting_app):
    binary = naming("naming-app")
    refuse_after_good_target(tool, waiting_app, binary, [f"{binary}:app_locl_op*"],
                             r"app_locl_op", r"app_local_op")
    refuse_after_good_target(tool, waiting_app, binary, ["naming:naming_lib_oq"],
                             r"naming_lib_oq", r"naming_lib_op")


@pytest.mark.bpf
def test_library_not_found(tool, naming, waiting_app):
    binary = naming("naming-app")
    refuse_after_good_target(tool, waiting_app, binary, ["libnosuchlib:foo"], r"nosuchlib")
    # Without -p: looked up in the loader cache and standard directories.
    assert_refused(run_tool(tool, ["naming_no_such_library:foo"]), r"naming_no_such_library")


def test_function_only_target_needs_pid(tool):
    assert_refused(run_tool(tool, [":app_local_op"]), r"app_local_op|:FUNCTION", r"-p|--pid")


@pytest.mark.bpf
@pytest.mark.parametrize("cut", ["header", "half"])
def test_malformed_elf(tool, naming, waiting_app, tmp_path, cut):
    """A truncated copy of a real binary: cut inside the ELF header, or in
    the middle (its section headers, at the end, are gone)."""
    binary = naming("naming-app")
    data = binary.read_bytes()
    broken = tmp_path / f"naming-app-{cut}"
    broken.write_bytes(data[:40] if cut == "header" else data[:len(data) // 2])
    result = refuse_after_good_target(tool, waiting_app, binary, [f"{broken}:app_local_op"],
                                      re.escape(str(broken)))
    # The path holds the test's name ("malformed"): look at the rest of the line.
    message = result.stderr.replace(str(broken), "FILE")
    assert re.search(r"(?i)truncat|malformed|corrupt|invalid|damaged", message), message


@pytest.mark.bpf
def test_regex_that_does_not_compile(tool, naming, waiting_app):
    binary = naming("naming-app")
    refuse_after_good_target(tool, waiting_app, binary, ["-r", f"{binary}:app_(local"],
                             r"app_\(local", r"(?i)regex|regular expression")


@pytest.mark.bpf
def test_pattern_over_the_limit(procs, tool, naming):
    binary = naming("naming-many")
    work = procs.start_workload(binary)
    for limit in ("10", "249"):
        assert_refused(run_tool(tool, ["-p", work.pid, "--max-functions", limit,
                                       f"{binary}:gen_fn_*"]),
                       r"250", r"--max-functions")
    assert_nothing_attached(work, binary, "gen_fn_000", "gen_fn_249")

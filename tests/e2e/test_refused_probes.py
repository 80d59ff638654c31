"""Functions the kernel refuses to probe: uprobes cannot take an
instruction with a LOCK or segment prefix, and one such point fails a whole
uprobe_multi link of a thousand. The tool finds the refused points (by
bisection, not one link per point: each failed or closed link waits for an
RCU grace period, and one refusal among 3,838 libstdc++ functions took over
three minutes), attaches every other function, names the ones it left out,
and leaves none of them half-probed. tests/programs/refused: 1,000 ordinary
functions, refused_lock_entry (`lock add` first) and refused_vex_entry (a VEX
load first), which the tool sees coming and tries alone, refused_mov_ss
(`mov %eax, %ss` first: nothing tells, found by bisecting a link of a
thousand), and refused_cs_ret (a `cs ret`: its entry is fine, a ret probe on
it is not)."""

import re
from pathlib import Path

import pytest

from conftest import (EXIT_TIMEOUT, assert_breakpoint_present, assert_refused, build_dir, built,
                      function_bytes_in_file, function_bytes_in_process, function_file_offset,
                      parse_json_records, run_tool, total_records)

pytestmark = pytest.mark.bpf
OK_FUNCTIONS = 1000


@pytest.fixture(scope="module")
def refused_probes() -> Path:
    return built(build_dir() / "tests" / "programs" / "refused-probes", "refused-probes")


def cs_ret_offset(program: Path) -> int:
    """File offset of refused_cs_ret's `cs ret` (the 2e byte; its body is 7
    bytes of mov/add/mov before it)."""
    offset = function_file_offset(program, "refused_cs_ret")
    code = function_bytes_in_file(program, "refused_cs_ret", 16)
    return offset + code.index(b"\x2e\xc3")


# Each refused function's length in bytes: its code and no neighbour's.
REFUSED_SIZES = {"refused_lock_entry": 5, "refused_vex_entry": 8, "refused_cs_ret": 9,
                 "refused_mov_ss": 3}


def assert_not_probed(work, program, symbol):
    size = REFUSED_SIZES[symbol]
    assert function_bytes_in_process(work.pid, program, symbol, size) == \
        function_bytes_in_file(program, symbol, size), f"{symbol} is probed in {work.pid}"


@pytest.mark.parametrize("exit_probes", ["auto", "ret"])
def test_refused_functions_are_named_and_the_rest_traced(procs, tool, refused_probes,
                                                         exit_probes):
    """auto: the entries of refused_lock_entry, refused_vex_entry and
    refused_mov_ss (and their return probes, the same points) are refused;
    ret: refused_cs_ret's ret probe too."""
    work = procs.start_workload(refused_probes, ["--calls", "3"])
    traced = procs.start_tool(tool, ["--json", "-v", "-p", work.pid, "--exit-probes", exit_probes,
                                     f"{refused_probes}:refused_*"])
    refused = {name: f"the kernel cannot place a uprobe at "
                     f"{function_file_offset(refused_probes, name):#x}"
               for name in ("refused_lock_entry", "refused_vex_entry", "refused_mov_ss")}
    if exit_probes == "ret":
        refused["refused_cs_ret"] = (f"the kernel cannot place a ret-instruction uprobe at "
                                     f"{cs_ret_offset(refused_probes):#x}")
    stderr = traced.lines("stderr")
    note = [line for line in stderr if "cannot be probed" in line]
    assert len(note) == 1, traced.describe()
    assert f"skipping {len(refused)} function" in note[0], note
    for name, reason in refused.items():
        assert name in note[0], note
        assert f"funclatency: {name}: {reason}" in stderr, traced.describe()
    banner = [line for line in stderr if line.startswith("Tracing ")]
    traced_count = OK_FUNCTIONS + 4 - len(refused)
    assert re.match(rf"Tracing {traced_count} functions ", banner[0]), banner
    # Not half-probed: a refused function keeps its bytes, the others are patched.
    for name in refused:
        assert_not_probed(work, refused_probes, name)
    assert_breakpoint_present(work, refused_probes, "refused_ok_000")
    assert_breakpoint_present(work, refused_probes, "refused_ok_999")

    work.start()
    truth = work.finish()
    code = traced.wait(EXIT_TIMEOUT)
    assert code == 0, f"funclatency exited with {code}\n{traced.describe()}"
    totals = total_records(parse_json_records(traced.text("stdout")))
    expected = {name: fn["calls"] for name, fn in truth.functions.items() if name not in refused}
    assert len(expected) == traced_count
    counted = {name: (record["count"], record["lost"]) for name, record in totals.items()}
    wrong = {name: (counted.get(name), calls) for name, calls in expected.items()
             if counted.get(name) != (calls, 0)}
    assert not wrong, f"(tool (count, lost), truth) where they differ: {wrong}"
    assert not set(totals) & set(refused), set(totals) & set(refused)


def test_a_pattern_of_refused_functions_only_is_an_error(procs, tool, refused_probes):
    """When the kernel refuses every function matched, nothing is traced: one
    error naming the function and why."""
    work = procs.start_workload(refused_probes, ["--calls", "1"])
    result = run_tool(tool, ["-p", work.pid, f"{refused_probes}:refused_lock_entry"])
    assert_refused(result, r"cannot probe refused_lock_entry in .*refused-probes",
                   r"the kernel cannot place a uprobe at 0x")
    assert_not_probed(work, refused_probes, "refused_lock_entry")

"""Functions left by a C++ exception or longjmp: counted lost, never paired
with a wrong return, and the calls after them are exact."""

import subprocess

import pytest

from conftest import record_problems, trace_workload

pytestmark = pytest.mark.bpf
MODES = ["events", "kernel"]


def mangled_name(binary, demangled):
    def symbols(*flags):
        return subprocess.run(["nm", "--defined-only", *flags, str(binary)], capture_output=True,
                              text=True, check=True, timeout=30).stdout.splitlines()

    # nm lists symbols in the same order with and without demangling.
    for mangled, readable in zip(symbols(), symbols("-C")):
        if readable.split(" ", 2)[-1].startswith(demangled + "("):
            return mangled.split()[-1]
    raise AssertionError(f"{demangled} not in {binary}")


def check_abandoned_then_normal(record, expected, what):
    assert expected["abandoned"] == 20 and expected["returned"] == 50
    problems = record_problems(record, expected)
    assert not problems, f"{what}:\n" + "\n".join(problems)


@pytest.mark.parametrize("mode", MODES)
def test_exception_thrown_by_traced_function(procs, tool, workload, mode):
    totals, truth = trace_workload(procs, tool, workload("exceptions"), ["may_throw"], mode,
                                   ["--abandon", "20", "--calls", "50"])
    check_abandoned_then_normal(totals["may_throw"], truth.function("may_throw"),
                                f"may_throw ({mode})")


@pytest.mark.parametrize("mode", MODES)
def test_exception_passing_through_traced_cxx_function(procs, tool, workload, mode):
    program = workload("exceptions")
    symbol = mangled_name(program, "workloads::Relay::pass_through")
    totals, truth = trace_workload(procs, tool, program, [symbol], mode,
                                   ["--abandon", "20", "--calls", "50"])
    assert len(totals) == 1, totals.keys()
    record = next(iter(totals.values()))
    check_abandoned_then_normal(record, truth.function("workloads::Relay::pass_through"),
                                f"Relay::pass_through ({mode})")


@pytest.mark.parametrize("mode", MODES)
def test_longjmp_out_of_traced_function(procs, tool, workload, mode):
    totals, truth = trace_workload(procs, tool, workload("longjmp"), ["jump_out"], mode,
                                   ["--abandon", "20", "--calls", "50"])
    check_abandoned_then_normal(totals["jump_out"], truth.function("jump_out"),
                                f"jump_out ({mode})")

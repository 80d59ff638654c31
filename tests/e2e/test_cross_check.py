"""libbpf-tools' funclatency, attached to the same function at the same time,
sees the same count in every usec row."""

import shutil
import signal

import pytest

from conftest import (EXIT_TIMEOUT, TOOL_ATTACH_TIMEOUT, assert_rows_match_truth, rows_from_console,
                      rows_from_json, totals_by_symbol)

pytestmark = pytest.mark.bpf
LIBBPF_TOOLS_FUNCLATENCY = "/usr/sbin/funclatency"


@pytest.mark.parametrize("mode", ["events", "kernel"])
def test_same_rows_as_libbpf_tools(procs, tool, target_app, mode):
    if shutil.which(LIBBPF_TOOLS_FUNCLATENCY) is None:
        pytest.fail(f"{LIBBPF_TOOLS_FUNCLATENCY} missing: scripts/setup installs libbpf-tools")
    work = procs.start_workload(target_app, ["--calls", "300", "--seed", "11"])
    # stdbuf: its "Tracing" line would otherwise wait in a pipe buffer until exit.
    peer = procs.spawn(["stdbuf", "-oL", LIBBPF_TOOLS_FUNCLATENCY, "-u",
                        f"{target_app}:slow_op"])
    peer.wait_for_line("stdout", r"^Tracing ", TOOL_ATTACH_TIMEOUT)
    ours = procs.start_tool(tool, ["--json", "--mode", mode, "-p", work.pid,
                                   f"{target_app}:slow_op"])
    work.start()
    truth = work.finish()
    assert ours.wait(EXIT_TIMEOUT) == 0, ours.describe()
    assert peer.stop(signal.SIGINT) == 0, peer.describe()

    expected = truth.function("slow_op")
    our_rows = rows_from_json(totals_by_symbol(ours.text("stdout"))["slow_op"])
    peer_rows = rows_from_console(peer.lines("stdout"))
    assert sum(peer_rows.values()) == expected["calls"] == 300, peer.describe()
    assert_rows_match_truth(peer_rows, expected, "libbpf-tools funclatency")
    assert_rows_match_truth(our_rows, expected, f"funclatency ({mode})")
    # Both sets of probes fire within a microsecond of each other, so the rows
    # can differ only by calls the truth marks as close to a row edge.
    movable = sum(r["near_edge"] + r["disturbed"] + sum(c for _, c in r["body_lower"])
                  for r in expected["log2_usec"])
    differing = sum(abs(our_rows.get(r, 0) - peer_rows.get(r, 0))
                    for r in set(our_rows) | set(peer_rows)) // 2
    assert differing <= movable, f"funclatency {our_rows} vs libbpf-tools {peer_rows}"
    if movable == 0:
        assert our_rows == peer_rows

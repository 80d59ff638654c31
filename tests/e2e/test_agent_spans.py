"""Why: the node agent follows spans as it follows functions. A span whose
points are a followed program's is attached in each file of that program as
a process starts it (--follow --span), and a --config file's `spans` are
taken at the start and at each reload (SIGHUP), a malformed one refused with
the last good configuration kept. Ground truth: job-queue, started after the
agent (a new process, exec'd), measures its own jobs; every completed job is
one span, every job started again or left open is lost by its reason."""

import os
import re
import shutil
import signal
import time

import pytest

from conftest import parse_json_records, wait_until
from test_spans import job_queue

pytestmark = pytest.mark.bpf

AGENT_START_TIMEOUT = 30.0


def own_copy(tmp_path):
    """job-queue under a name no other run follows (the agent follows every
    process on the host that runs the program)."""
    program = tmp_path / f"jq-{os.getpid()}"
    shutil.copy2(job_queue(), program)
    return program


def span_lines(agent, name="job"):
    attached = rf"^funclatency: following span {name}: attached in "
    return sum(1 for line in agent.lines("stderr") if re.search(attached, line))


def wait_for_span_attached(agent, count, timeout=30.0):
    if not wait_until(lambda: span_lines(agent) >= count, timeout):
        pytest.fail(f"the span was attached {span_lines(agent)} times, not {count}\n"
                    f"{agent.describe()}")


def run_jobs(procs, program, agent, attached_before):
    """One job-queue run, exec'd now: waits for the agent to attach its file
    (the span's points) before the jobs start, returns its truth."""
    work = procs.start_workload(program, ["--jobs", "200", "--workers", "4", "--reused", "3",
                                          "--left-open", "2"])
    wait_for_span_attached(agent, attached_before + 1)
    work.start()
    return work.finish().data["spans"][0]


def span_totals(agent_stdout, name="job"):
    """The span's totals over every series (the agent splits by cgroup)."""
    records = [r for r in parse_json_records(agent_stdout)
               if r.get("type") == "total" and r.get("symbol") == name]
    assert records, agent_stdout[-2000:]
    assert all(r["kind"] == "span" for r in records), records
    keys = ("count", "lost_span_reused", "lost_span_open", "lost_span_full")
    return {key: sum(r[key] for r in records) for key in keys}


def assert_counted(totals, truths):
    assert totals["count"] == sum(t["completed"] for t in truths) > 0, (totals, truths)
    assert totals["lost_span_reused"] == sum(t["reused"] for t in truths), (totals, truths)
    assert totals["lost_span_open"] == sum(t["left_open"] for t in truths), (totals, truths)
    assert totals["lost_span_full"] == 0, totals


def test_follow_span_in_a_program_started_later(procs, tool, tmp_path):
    program = own_copy(tmp_path)
    agent = procs.spawn([tool, "--follow", "--json",
                         "--span", f"job={program}:submit_job:arg0 -> complete_job:arg0"])
    agent.wait_for_line("stderr", r"^Following ", AGENT_START_TIMEOUT)
    truths = [run_jobs(procs, program, agent, 0)]
    # A second process of the same file: its probes are in already.
    work = procs.start_workload(program, ["--jobs", "100", "--workers", "2"])
    time.sleep(0.5)
    work.start()
    truths.append(work.finish().data["spans"][0])
    assert agent.stop() == 0, agent.describe()
    assert span_lines(agent) == 1, agent.text("stderr")  # one file, attached once
    assert_counted(span_totals(agent.text("stdout")), truths)


def write_config(path, program, spans):
    text = ("targets:\n"
            "  - name: jobs\n"
            f"    program: {program}\n"
            "    functions: [complete_job]\n")
    if spans:
        text += "spans:\n" + "".join(f"  {line}\n" for line in spans)
    path.write_text(text)


def test_config_reload_adds_a_span_and_refuses_a_malformed_one(procs, tool, tmp_path):
    program = own_copy(tmp_path)
    config = tmp_path / "agent.yaml"
    # At the start: a function and a span matched by the thread (each
    # complete_job call, entry to return).
    call = f"- call={program}:complete_job:entry -> complete_job:return"
    write_config(config, program, [call])
    agent = procs.spawn([tool, "--config", config, "--json"])
    agent.wait_for_line("stderr", r"^Following ", AGENT_START_TIMEOUT)
    before = procs.start_workload(program, ["--jobs", "30"])
    agent.wait_for_line("stderr", r"^funclatency: following jobs: 1 function attached", 30)
    if not wait_until(lambda: span_lines(agent, "call") == 1, 30):
        pytest.fail(agent.describe())
    before.start()
    before_truth = before.finish().data["spans"][0]

    # Added by a reload, in the mapping form; `call` is kept as it was.
    write_config(config, program, [call, "- name: job", f"  start: {program}:submit_job:arg0",
                                   "  end: complete_job:arg0"])
    agent.send(signal.SIGHUP)
    agent.wait_for_line("stderr", r"reloaded .*: following 1 target and 2 spans", 20)
    truth = run_jobs(procs, program, agent, 0)

    # A malformed span: refused whole, one message; the spans keep running.
    write_config(config, program, [call, f"- job={program}:submit_job:arg9 -> complete_job:arg0"])
    agent.send(signal.SIGHUP)
    agent.wait_for_line("stderr", r"reload of .* refused: .*arg9.*last good configuration", 20)
    work = procs.start_workload(program, ["--jobs", "50", "--workers", "2"])
    time.sleep(0.5)
    work.start()
    kept_truth = work.finish().data["spans"][0]

    # Removed: its probes go, a later run's jobs are no spans of it.
    write_config(config, program, [call])
    agent.send(signal.SIGHUP)
    agent.wait_for_line("stderr", r"stopped following span job", 20)
    after = procs.start_workload(program, ["--jobs", "20"])
    time.sleep(0.5)
    after.start()
    after_truth = after.finish().data["spans"][0]
    assert agent.stop() == 0, agent.describe()

    assert_counted(span_totals(agent.text("stdout")), [truth, kept_truth])
    everything = (before_truth, truth, kept_truth, after_truth)
    # The function and the kept span were traced all along: every job of
    # the four runs, each call one span.
    functions = [r for r in parse_json_records(agent.text("stdout"))
                 if r.get("type") == "total" and r.get("symbol") == "complete_job"]
    assert sum(r["count"] for r in functions) == sum(t["completed"] for t in everything), functions
    calls = span_totals(agent.text("stdout"), "call")
    assert calls == {"count": sum(t["completed"] for t in everything), "lost_span_reused": 0,
                     "lost_span_open": 0, "lost_span_full": 0}, calls
    assert span_lines(agent, "call") == 1, agent.text("stderr")  # kept: attached once


def test_a_config_without_spans_takes_a_restart_to_add_one(procs, tool, tmp_path):
    """A file that starts with no span runs without the open-span map: a
    reload that adds a span is refused, the last good file kept."""
    program = own_copy(tmp_path)
    config = tmp_path / "agent.yaml"
    write_config(config, program, [])
    agent = procs.spawn([tool, "--config", config, "--json"])
    agent.wait_for_line("stderr", r"^Following ", AGENT_START_TIMEOUT)
    write_config(config, program, [f"- job={program}:submit_job:arg0 -> complete_job:arg0"])
    agent.send(signal.SIGHUP)
    agent.wait_for_line(
        "stderr", r"reload of .* refused: the run started with no span; restart to add spans", 20)
    assert agent.stop() == 0, agent.describe()

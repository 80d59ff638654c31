"""Why: a span runs from one function's probe point to another's, matched by
a value, across threads. job-queue submits jobs on its main thread
(submit_job(job)) and workers complete them after sleeping (complete_job
(job)); it measures each job itself. In both modes: every completed job is
one span, their sum, min and max lie in the program's own bounds, a key
started again before its end and a span left open at exit are each counted
lost by reason, and nothing is paired with the wrong end."""

import http.server
import shutil
import signal
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import (assert_refused, build_dir, built, free_port, run_tool,
                      totals_by_symbol, wait_until)
from test_otlp import attributes, metrics_of, receiver_program, start_receiver  # noqa: F401
from test_prometheus import PrometheusServer, http_get, promtool_problems

pytestmark = pytest.mark.bpf


def job_queue():
    return built(build_dir() / "tests" / "programs" / "job-queue", "job-queue")


@pytest.mark.parametrize("mode", ["events", "kernel", "auto"])
def test_job_spans_counted_exactly_within_the_programs_bounds(procs, tool, mode):
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "300", "--workers", "4", "--reused", "7",
                                          "--left-open", "5"])
    args = ["--json", "--mode", mode, "-p", str(work.pid),
            "--span", f"job={program}:submit_job:arg0 -> complete_job:arg0"]
    if mode == "auto":
        args += ["--auto-threshold", "50"]  # the switch to kernel mode happens mid-run
    traced = procs.start_tool(tool, args)
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["job"]
    assert record["kind"] == "span", record
    # auto: the span's rate passes the threshold, so it ends in kernel mode.
    assert record["mode"] == ("kernel" if mode == "auto" else mode), record
    assert record["count"] == truth["completed"] == 300, (record, truth)
    assert record["lost_span_reused"] == truth["reused"], record
    assert record["lost_span_open"] == truth["left_open"], record
    assert record["lost_span_full"] == 0, record
    assert record["lost"] == truth["reused"] + truth["left_open"], record
    # A span is never shorter than the program's least time between the two
    # calls, nor longer than from the start's call to the end's return.
    assert truth["min_low_ns"] <= record["min_ns"], (record, truth)
    assert record["max_ns"] <= truth["max_high_ns"], (record, truth)
    assert truth["sum_low_ns"] <= record["sum_ns"] <= truth["sum_high_ns"], (record, truth)
    # The two kinds of job show: rows at and above each sleep.
    rows = {low_ns: count for low_ns, _, count in record["log2_buckets"]}
    assert sum(count for low, count in rows.items() if low >= 8_000_000) >= truth["long"], rows


def test_span_capacity_full_is_counted(procs, tool):
    """A start the open-span map has no room for is lost, counted (never an
    end paired with another start)."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "20", "--workers", "1", "--left-open", "40"])
    traced = procs.start_tool(tool, ["--json", "-p", str(work.pid), "--span-capacity", "16",
                                     "--span", f"job={program}:submit_job:arg0 -> "
                                               "complete_job:arg0"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["job"]
    assert record["count"] == truth["completed"], record
    # 40 starts into a map of 16: 16 stay open at exit, 24 found no room.
    assert record["lost_span_open"] == 16, record
    assert record["lost_span_full"] == 24, record


def test_thread_span_on_one_thread(procs, tool):
    """Matched by the thread: complete_job's entry to its return, on the
    worker, is as many spans as jobs."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "50"])
    traced = procs.start_tool(tool, ["--json", "-p", str(work.pid), "--span",
                                     f"call={program}:complete_job:entry -> complete_job:return"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["call"]
    assert record["count"] == truth["completed"] == 50, record
    assert record["lost"] == 0, record
    assert record["max_ns"] < 5_000_000, record


def test_span_series_and_slowest_with_the_stack_at_the_end(procs, tool):
    """--by comm splits spans by the end's thread; --slowest keeps the
    slowest spans with the stack where they ended (complete_job, on a
    worker)."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "120"])
    traced = procs.start_tool(tool, ["--json", "--by", "comm", "--slowest", "2", "-p",
                                     str(work.pid), "--span",
                                     f"job={program}:submit_job:arg0 -> complete_job:arg0"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    record = totals_by_symbol(traced.text("stdout"))["job"]
    assert record["comm"] == "job-queue" and record["count"] == truth["completed"], record
    exemplars = record["exemplars"]
    assert len(exemplars) == 2, record
    for exemplar in exemplars:
        assert exemplar["duration_ns"] <= truth["max_high_ns"], exemplar
        frames = [frame.get("symbol") for frame in exemplar["stack"]]
        assert frames[:2] == ["complete_job", "worker"], frames


def test_span_beside_cpu_split_and_self(procs, tool):
    """--cpu-split and --self split the functions' calls; a span, which may
    run on several threads and makes no calls, keeps its one histogram."""
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "40"])
    traced = procs.start_tool(tool, ["--json", "--cpu-split", "--self", "-p", str(work.pid),
                                     "--span",
                                     f"job={program}:submit_job:arg0 -> complete_job:arg0",
                                     f"{program}:complete_job"])
    work.start()
    truth = work.finish().data["spans"][0]
    assert traced.wait(30) == 0, traced.describe()
    totals = totals_by_symbol(traced.text("stdout"))
    span, function = totals["job"], totals["complete_job"]
    assert span["count"] == function["count"] == truth["completed"] == 40, totals
    assert "oncpu" in function and "self" in function, function
    assert "oncpu" not in span and "self" not in span, span


@pytest.mark.parametrize("span, pattern", [
    ("job=x:submit_job:arg0", "no \" -> \""),
    ("job=x:submit_job:arg0 -> complete_job:entry", "one point carries a value"),
    ("job=x:submit_job:arg9 -> complete_job:arg0", "not entry, return, ret or arg0..arg5"),
    ("=x:a:entry -> b:entry", "NAME"),
    ("job=x:a:entry -> b:entry any-process", "any-process needs a by-value span"),
])
def test_bad_spans_refused(tool, span, pattern):
    assert_refused(run_tool(tool, ["--span", span]), pattern)


def test_spans_in_prometheus_are_a_family_of_their_own(procs, tool, tmp_path):
    """Debian's prometheus scrapes ebpf_function_span_ms{span="job"}: one
    sample per job, and the spans lost by reason (reused; open once the
    process is gone) in ebpf_function_lost_calls_total."""
    # A private copy, traced without -p: the tool outlives the program for
    # the last scrapes.
    program = tmp_path / "job-queue"
    shutil.copy2(job_queue(), program)
    endpoint = f"127.0.0.1:{free_port()}"
    prometheus = PrometheusServer(procs, tmp_path, endpoint)
    work = procs.start_workload(program, ["--jobs", "100", "--reused", "3", "--left-open", "4"])
    traced = procs.start_tool(tool, ["--prometheus", endpoint, "--span",
                                     f"job={program}:submit_job:arg0 -> complete_job:arg0"])
    work.start()
    truth = work.finish().data["spans"][0]
    count = 'ebpf_function_span_ms_count{span="job"}'
    open_lost = 'ebpf_function_lost_calls_total{span="job",reason="open"}'
    assert wait_until(lambda: prometheus.query(open_lost) and prometheus.scalar(open_lost) == 4,
                      20.0, interval=0.25), (prometheus.query(open_lost), traced.describe())
    assert prometheus.scalar(count) == truth["completed"] == 100
    assert prometheus.scalar('ebpf_function_lost_calls_total{span="job",reason="reused"}') == 3
    assert not prometheus.query('ebpf_function_latency_ms_count{symbol="job"}')
    _, text = http_get(f"http://{endpoint}/metrics")
    assert "# TYPE ebpf_function_span_ms histogram" in text, text
    problems = [p for p in promtool_problems(text) if "abbreviated units" not in p]
    assert not problems, problems
    assert traced.stop() == 0, traced.describe()


def test_spans_in_otlp_are_a_metric_of_their_own(procs, tool, receiver_program):  # noqa: F811
    receiver = start_receiver(procs, receiver_program)
    program = job_queue()
    work = procs.start_workload(program, ["--jobs", "60", "--left-open", "2"])
    traced = procs.start_tool(tool, [
        "-p", work.pid, "--mode", "kernel", f"--otlp={receiver.url('http/protobuf')}",
        "--otlp-protocol", "http/protobuf",
        "--span", f"job={program}:submit_job:arg0 -> complete_job:arg0"])
    work.start()
    work.finish()
    assert traced.wait(30) == 0, traced.describe()
    _, _, metrics = metrics_of(receiver.requests_once_quiet()[-1]["request"])
    assert "function_span_ms" in metrics, sorted(metrics)
    points = metrics["function_span_ms"]["histogram"]["data_points"]
    point = next(p for p in points if attributes(p["attributes"]).get("span") == "job")
    assert int(point["count"]) == 60, point
    # Only spans are traced: no function latency metric.
    assert "function_latency_ms" not in metrics, sorted(metrics)
    lost = {attributes(p["attributes"])["reason"]: int(p.get("as_int", 0))
            for p in metrics["function_lost_calls"]["sum"]["data_points"]
            if attributes(p["attributes"]).get("span") == "job"}
    assert lost == {"reused": 0, "full": 0, "open": 2, "ringbuf": 0}, lost


# --- Debian's nginx, stripped as shipped -------------------------------------

NGINX = Path("/usr/sbin/nginx")
DELAYS_MS = (20, 80)
REQUESTS_EACH = 8


class SlowUpstream(http.server.BaseHTTPRequestHandler):
    """Answers /DELAY after DELAY ms."""

    def do_GET(self):
        time.sleep(int(self.path.strip("/")) / 1000)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def nginx_config(directory: Path, port: int, upstream_port: int) -> Path:
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (directory / sub).mkdir(exist_ok=True)
    config = directory / "nginx.conf"
    config.write_text(f"""
worker_processes 1;
error_log {directory}/error.log;
pid {directory}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {directory}/client_body;
  proxy_temp_path {directory}/proxy;
  fastcgi_temp_path {directory}/fastcgi;
  uwsgi_temp_path {directory}/uwsgi;
  scgi_temp_path {directory}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{ proxy_pass http://127.0.0.1:{upstream_port}; }}
  }}
}}
""")
    return config


def get(url: str, timeout=10.0) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        response.read()
        return response.status


@pytest.mark.skipif(not NGINX.exists(), reason="nginx-light is not installed (scripts/setup test)")
def test_nginx_request_spans_show_the_upstream_delays(procs, tool, tmp_path):
    """A request's life (create -> free, matched by the request pointer)
    shows the upstream's 20 and 80 ms, while ngx_http_process_request, which
    only starts the request, returns in microseconds."""
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowUpstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    config = nginx_config(tmp_path, port, upstream.server_address[1])
    server = procs.spawn([NGINX, "-c", config, "-p", tmp_path, "-g", "daemon off;"])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert time.monotonic() < deadline, server.describe()
                time.sleep(0.05)
        # Its one worker, which serves the requests: no other nginx on the
        # host is traced.
        children_file = Path(f"/proc/{server.pid}/task/{server.pid}/children")
        assert wait_until(lambda: len(children_file.read_text().split()) == 1, 10.0,
                          interval=0.05), server.describe()
        children = children_file.read_text().split()
        traced = procs.start_tool(tool, [
            "--json", "-m", "-p", children[0], f"{NGINX}:ngx_http_process_request", "--span",
            f"request={NGINX}:ngx_http_create_request:ret -> ngx_http_free_request:arg0"])
        answered = 0
        client_ns = {delay: [] for delay in DELAYS_MS}  # each request's time at the client
        for _ in range(REQUESTS_EACH):
            for delay in DELAYS_MS:
                began = time.monotonic_ns()
                answered += get(f"http://127.0.0.1:{port}/{delay}") == 200
                client_ns[delay].append(time.monotonic_ns() - began)
        assert traced.stop() == 0, traced.describe()
    finally:
        server.stop(signal.SIGQUIT)
        upstream.shutdown()
    totals = totals_by_symbol(traced.text("stdout"))
    request, process = totals["request"], totals["ngx_http_process_request"]
    assert answered == REQUESTS_EACH * len(DELAYS_MS)
    assert request["kind"] == "span", request
    assert request["count"] == answered, request
    assert request["lost"] == 0, request
    # A request's span lasts at least its upstream's delay and at most what
    # the client waited (nginx frees the request once the answer is sent).
    everything = [ns for times in client_ns.values() for ns in times]
    assert request["min_ns"] >= DELAYS_MS[0] * 1_000_000, request
    assert request["sum_ns"] <= sum(everything), (request, client_ns)
    assert request["sum_ns"] >= REQUESTS_EACH * sum(DELAYS_MS) * 1_000_000, request
    # The histogram shows the two delays: the 80 ms requests at 64 ms or more,
    # the 20 ms requests below it (each one the client saw answered in less).
    rows = [(low, count) for low, _, count in request["log2_buckets"]]
    below_64 = sum(c for low, c in rows if low < 64_000_000)
    fast_20 = sum(ns < 64_000_000 for ns in client_ns[DELAYS_MS[0]])
    assert fast_20 >= REQUESTS_EACH // 2, f"the machine is too busy: {client_ns}"
    assert fast_20 <= below_64 <= REQUESTS_EACH, (rows, client_ns)
    assert answered - below_64 >= REQUESTS_EACH, rows
    # ngx_http_process_request only starts each request: microseconds.
    assert process["count"] == answered, process
    assert process["p50_ns"] < 2_000_000, process
    assert process["max_ns"] < request["min_ns"], (process, request)


def test_span_points_that_name_no_one_function_are_refused(tool):
    program = job_queue()
    assert_refused(run_tool(tool, ["--span", f"a={program}:nosuch:entry -> complete_job:entry"]),
                   r"span a: no function \"nosuch\"")

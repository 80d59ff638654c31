"""Names that are not UTF-8, through every output: a binary whose path holds
the byte 0xFF (a folder named so) and a function whose symbol ends in 0xFF
(tests/programs/odd_names). Console, JSON lines, OTLP and Prometheus must all
write every record, show the name with U+FFFD for the bad byte, and count one
series for the function (`--json` must not abort on such a path)."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from conftest import build_dir, free_port, wait_until

pytestmark = pytest.mark.bpf

CALLS = 200
REPLACED = "\ufffd"


@pytest.fixture
def odd_binary(tmp_path):
    """odd-names copied into a folder whose name ends in the byte 0xFF."""
    program = build_dir() / "tests" / "programs" / "odd-names"
    if not program.is_file():
        pytest.fail(f"{program} is not built; build the odd-names target")
    folder = os.path.join(os.fsencode(tmp_path), b"odd\xff")
    os.mkdir(folder)
    copy = os.path.join(folder, b"odd-names")
    shutil.copy(os.fsencode(program), copy)
    return copy


class Raw:
    """A process whose output is kept as bytes (its stderr may hold the raw
    name), read from files so no pipe fills."""

    def __init__(self, args, tmp_path, name):
        self.out_path = tmp_path / f"{name}.out"
        self.err_path = tmp_path / f"{name}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                          start_new_session=True)

    def out(self):
        return self.out_path.read_bytes()

    def err(self):
        return self.err_path.read_bytes()

    def wait_for(self, pattern, timeout, stream="out"):
        def found():
            return re.search(pattern, self.out() if stream == "out" else self.err())
        assert wait_until(found, timeout, interval=0.05), \
            f"no {pattern!r} on {stream} within {timeout}s: {self.out()[-2000:]!r} " \
            f"{self.err()[-2000:]!r}"

    def kill(self):
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)


@pytest.fixture
def raw(tmp_path):
    started = []

    def spawn(args, name):
        process = Raw(args, tmp_path, name)
        started.append(process)
        return process

    yield spawn
    for process in reversed(started):
        process.kill()


def traced_run(raw, tool, odd_binary, name, tool_args, scrape_port=None):
    """Runs odd-names CALLS times under funclatency; returns (stdout bytes,
    stderr bytes, the last /metrics text seen before the tool stopped)."""
    work = raw([odd_binary, str(CALLS)], f"{name}-work")
    work.wait_for(rb"^ready pid=\d+", 10)
    tool_process = raw([str(tool), "-p", str(work.popen.pid), *tool_args, ":odd_op*"], name)
    tool_process.wait_for(rb"Tracing ", 30, stream="err")
    os.kill(work.popen.pid, signal.SIGUSR1)
    work.wait_for(rb"done \d+", 60)
    metrics = None
    if scrape_port:
        metrics = wait_for_metrics(scrape_port)
    os.kill(work.popen.pid, signal.SIGUSR1)
    assert work.popen.wait(10) == 0
    tool_process.popen.send_signal(signal.SIGINT)
    code = tool_process.popen.wait(15)
    assert code == 0, f"exit {code}: {tool_process.err()[-3000:]!r}"
    return tool_process.out(), tool_process.err(), metrics


def http_get(port, path="/metrics"):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n", 1)[0].decode(), body


def wait_for_metrics(port):
    """The exposition once it counts every call (the tool reports each second)."""
    seen = {}

    def counted():
        status, body = http_get(port)
        seen["text"] = body.decode("utf-8")  # strict: the exposition must be UTF-8
        return status.endswith("200 OK") and re.search(rf'latency_ms_count\{{[^}}]*\}} {CALLS}\b', seen["text"])
    assert wait_until(counted, 15, interval=0.2), seen.get("text")
    return seen["text"]


def start_receiver(raw):
    program = build_dir() / "tests" / "programs" / "otlp-receiver"
    if not program.is_file():
        pytest.fail(f"{program} is not built; build the otlp-receiver target")
    receiver = raw([str(program)], "receiver")
    receiver.wait_for(rb'\{"listening"', 10)
    ports = json.loads(receiver.out().splitlines()[0])["listening"]
    return receiver, f"http://127.0.0.1:{ports['http']}/v1/metrics"


def test_json_prometheus_and_otlp_write_every_record(raw, tool, odd_binary):
    receiver, url = start_receiver(raw)
    port = free_port()
    out, err, metrics = traced_run(raw, tool, odd_binary, "json",
                                   ["--json", "-i", "1", "--prometheus", f"127.0.0.1:{port}",
                                    f"--otlp={url}"], scrape_port=port)
    assert b"terminate called" not in err, err
    records = [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
    totals = [r for r in records if r["type"] == "total"]
    assert len(totals) == 1, records
    total = totals[0]
    assert total["count"] == CALLS
    assert total["symbol"] == "odd_op" + REPLACED
    assert total["binary"].endswith(f"/odd{REPLACED}/odd-names"), total["binary"]
    # Every interval record is there too, with the same names.
    assert all(r["symbol"] == total["symbol"] and r["binary"] == total["binary"]
               for r in records)
    assert sum(r["count"] for r in records if r["type"] == "interval") == CALLS

    # Prometheus: one series, named as JSON names it.
    series = re.findall(r'latency_ms_count\{([^}]*)\} (\d+)', metrics)
    assert len(series) == 1, metrics
    labels, count = series[0]
    assert int(count) == CALLS
    assert f'symbol="odd_op{REPLACED}"' in labels
    assert f'/odd{REPLACED}/odd-names"' in labels

    # OTLP: the final export holds the function once, named the same.
    def exported_points():
        points = []
        for line in receiver.out().decode("utf-8").splitlines():
            record = json.loads(line)
            if "request" not in record:
                continue
            latest = []
            for resource in record["request"]["resource_metrics"]:
                for scope in resource["scope_metrics"]:
                    for metric in scope["metrics"]:
                        if metric["name"] != "function_latency_ms":
                            continue
                        for point in metric["histogram"]["data_points"]:
                            latest.append({a["key"]: a["value"].get("string_value")
                                           for a in point["attributes"]} | {
                                               "count": int(point["count"])})
            points = latest or points
        return points
    assert wait_until(lambda: any(p["count"] == CALLS for p in exported_points()), 10), \
        receiver.out()[-3000:]
    points = exported_points()
    assert len(points) == 1, points
    assert points[0]["symbol"] == "odd_op" + REPLACED
    assert points[0]["binary"] == total["binary"]


def test_console_writes_the_total(raw, tool, odd_binary):
    out, err, _ = traced_run(raw, tool, odd_binary, "console", [])
    text = out.decode("utf-8")  # strict: what the sinks print is UTF-8
    assert "odd_op" + REPLACED in text, text
    assert re.search(rf"\bcount\D+{CALLS}\b|\b{CALLS} calls\b|\b{CALLS}\b", text), text

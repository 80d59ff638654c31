"""OTLP export end to end: funclatency traces target-app with --otlp and a
real receiver (tests/programs/otlp-receiver, HTTP and gRPC on 127.0.0.1)
decodes what arrives. The exported buckets must equal the tool's own JSON
rows for the same run, in both aggregation modes, for both histogram kinds;
SIGINT while an export hangs must still exit within the export timeout."""

import json
import os
import signal
import time

import pytest

from conftest import build_dir, rows_from_json, totals_by_symbol, wait_until

pytestmark = pytest.mark.bpf

RECEIVER_TIMEOUT = 10.0


@pytest.fixture(scope="session")
def receiver_program():
    path = build_dir() / "tests" / "programs" / "otlp-receiver"
    if not path.is_file():
        pytest.fail(f"{path} is not built; build the otlp-receiver target")
    return path


class Receiver:
    def __init__(self, process):
        self.process = process
        line = process.wait_for_line("stdout", r'^\{"listening"', RECEIVER_TIMEOUT)
        ports = json.loads(line)["listening"]
        self.http_port, self.grpc_port = ports["http"], ports["grpc"]

    def url(self, protocol):
        if protocol == "grpc":
            return f"http://127.0.0.1:{self.grpc_port}"
        return f"http://127.0.0.1:{self.http_port}/v1/metrics"

    def requests(self):
        out = []
        for line in self.process.lines("stdout"):
            record = json.loads(line)
            if "request" in record:
                out.append(record)
        return out

    def requests_once_quiet(self, quiet=0.5, timeout=RECEIVER_TIMEOUT):
        """Every request, for a sender that has exited: the receiver's line for
        the last one may still be on its way through the pipe (under load it
        was not there yet), so this waits for at least one and then for
        `quiet` seconds without a new one."""
        self.wait_for_requests(1, timeout)
        deadline = time.monotonic() + timeout
        seen = len(self.requests())
        while time.monotonic() < deadline:
            time.sleep(quiet)
            now = len(self.requests())
            if now == seen:
                return self.requests()
            seen = now
        pytest.fail(f"the receiver was still getting requests after {timeout}s\n"
                    f"{self.process.describe()}")

    def wait_for_requests(self, count, timeout=RECEIVER_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.requests()
            if len(found) >= count:
                return found
            time.sleep(0.05)
        pytest.fail(f"the receiver got {len(self.requests())} requests, wanted {count}\n"
                    f"{self.process.describe()}")


def start_receiver(procs, program, *args):
    return Receiver(procs.spawn([program, *args]))


def attributes(items):
    out = {}
    for item in items or []:
        value = item["value"]
        out[item["key"]] = value.get("string_value", value.get("int_value"))
    return out


def metrics_of(request):
    resource_metrics = request["resource_metrics"][0]
    scope = resource_metrics["scope_metrics"][0]
    return resource_metrics, scope, {m["name"]: m for m in scope["metrics"]}


def exported_rows(metric, kind):
    """{row: count} (non-zero rows) of the slow_op point, and the point."""
    if kind == "explicit":
        points = metric["histogram"]["data_points"]
    else:
        points = metric["exponential_histogram"]["data_points"]
    point = next(p for p in points if attributes(p["attributes"])["symbol"] == "slow_op")
    rows = {}
    if kind == "explicit":
        for row, count in enumerate(point.get("bucket_counts", [])):
            if int(count):
                rows[row] = int(count)
    else:
        # Scale 0 in usec: index r >= 1 is row r; zero_count + index 0 is row 0.
        rows[0] = int(point.get("zero_count", 0))
        positive = point.get("positive", {})
        offset = int(positive.get("offset", 0))
        for k, count in enumerate(positive.get("bucket_counts", [])):
            rows[offset + k] = rows.get(offset + k, 0) + int(count)
        rows = {row: count for row, count in rows.items() if count}
    return rows, point


@pytest.mark.parametrize("mode,protocol,kind", [
    ("events", "http/protobuf", "explicit"),
    ("kernel", "http/protobuf", "explicit"),
    ("events", "grpc", "exponential"),
    ("kernel", "grpc", "exponential"),
    ("events", "http/json", "exponential"),
    ("kernel", "grpc", "explicit"),
])
def test_exported_buckets_equal_the_tools_rows(procs, tool, target_app, receiver_program, mode,
                                               protocol, kind):
    receiver = start_receiver(procs, receiver_program)
    work = procs.start_workload(target_app, ["--calls", "200", "--seed", "5"])
    env = dict(os.environ, OTEL_SERVICE_NAME="funclatency-e2e",
               OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test")
    traced = procs.start_tool(tool, [
        "-p", work.pid, "--mode", mode, "--json", f"--otlp={receiver.url(protocol)}",
        "--otlp-protocol", protocol, "--otlp-histogram", kind, f"{target_app}:slow_op"], env=env)
    work.start()
    work.finish()
    assert traced.stop(signal.SIGINT) == 0, traced.describe()

    total = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert total["count"] == 200, total
    json_rows = rows_from_json(total)

    # The final flush at exit carries the totals; the last request is it.
    request = receiver.wait_for_requests(1)[-1]
    assert request["transport"] == ("grpc" if protocol == "grpc" else "http")
    resource_metrics, scope, metrics = metrics_of(request["request"])
    resource = attributes(resource_metrics["resource"]["attributes"])
    assert resource["service.name"] == "funclatency-e2e"
    assert resource["deployment.environment"] == "test"
    assert int(resource["process.pid"]) == work.pid
    assert resource.get("host.name")
    assert scope["scope"]["name"] == "funclatency"

    name = "function_latency_ms" if kind == "explicit" else "function_latency_us"
    assert name in metrics, sorted(metrics)
    metric = metrics[name]
    assert metric["unit"] == ("ms" if kind == "explicit" else "us")
    body = metric["histogram"] if kind == "explicit" else metric["exponential_histogram"]
    assert body["aggregation_temporality"] == 2  # cumulative
    rows, point = exported_rows(metric, kind)
    assert rows == json_rows, f"exported {rows} vs --json {json_rows}"
    assert int(point["count"]) == total["count"]
    unit_ns = 1e6 if kind == "explicit" else 1e3
    assert point["sum"] == pytest.approx(total["sum_ns"] / unit_ns, rel=1e-9)
    assert point["min"] == pytest.approx(total["min_ns"] / unit_ns, rel=1e-9)
    assert point["max"] == pytest.approx(total["max_ns"] / unit_ns, rel=1e-9)
    point_attributes = attributes(point["attributes"])
    assert point_attributes["binary"] == str(target_app.resolve())
    assert "pid" not in point_attributes  # only with --otlp-pid-attribute
    # Prometheus' ebpf_function_lost_calls_total, less the prefix and _total
    # (src/output/metric_names.h); no agent here, so no funclatency_lost_calls.
    assert "function_lost_calls" in metrics
    assert "funclatency_lost_calls" not in metrics


def test_delta_temporality_sums_to_the_total(procs, tool, target_app, receiver_program):
    receiver = start_receiver(procs, receiver_program)
    work = procs.start_workload(target_app, ["--calls", "300", "--rate", "200", "--seed", "9"])
    env = dict(os.environ, OTEL_METRIC_EXPORT_INTERVAL="300")
    traced = procs.start_tool(tool, [
        "-p", work.pid, "-i", "1", "--json", f"--otlp={receiver.url('http/protobuf')}",
        "--otlp-temporality", "delta", "--otlp-pid-attribute", f"{target_app}:slow_op"], env=env)
    work.start()
    work.finish()
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    total = totals_by_symbol(traced.text("stdout"))["slow_op"]
    json_rows = rows_from_json(total)

    # The receiver may still be printing the final export: wait until the
    # deltas add up to the total (or time runs out and the sums below fail).
    def exported_count():
        return sum(int(exported_rows(metrics_of(r["request"])[2]["function_latency_ms"],
                                     "explicit")[1].get("count", 0))
                   for r in receiver.requests())
    wait_until(lambda: exported_count() >= total["count"], 10)
    summed, count, starts = {}, 0, []
    for record in receiver.wait_for_requests(1):
        _, _, metrics = metrics_of(record["request"])
        metric = metrics["function_latency_ms"]
        assert metric["histogram"]["aggregation_temporality"] == 1  # delta
        rows, point = exported_rows(metric, "explicit")
        assert int(attributes(point["attributes"])["pid"]) == work.pid
        for row, n in rows.items():
            summed[row] = summed.get(row, 0) + n
        count += int(point.get("count", 0))
        starts.append((int(point["start_time_unix_nano"]), int(point["time_unix_nano"])))
    assert count == total["count"] == 300
    assert summed == json_rows
    # Consecutive deltas cover adjacent, non-overlapping intervals.
    for (_, end), (start, _) in zip(starts, starts[1:]):
        assert start >= end


def test_exports_while_tracing_without_an_interval(procs, tool, target_app, receiver_program):
    """An agent runs for days without -i: it must export every export
    interval, with growing cumulative counts, not only at exit."""
    receiver = start_receiver(procs, receiver_program)
    work = procs.start_workload(target_app, ["--calls", "0", "--rate", "100"])
    env = dict(os.environ, OTEL_METRIC_EXPORT_INTERVAL="300")
    traced = procs.start_tool(tool, [
        "-p", work.pid, f"--otlp={receiver.url('grpc')}", "--otlp-protocol", "grpc",
        f"{target_app}:slow_op"], env=env)
    work.start()
    requests = receiver.wait_for_requests(3)
    assert traced.popen.poll() is None, "exported only at exit"
    counts = []
    for record in requests:
        _, _, metrics = metrics_of(record["request"])
        _, point = exported_rows(metrics["function_latency_ms"], "explicit")
        counts.append(int(point.get("count", 0)))
    assert counts == sorted(counts) and counts[-1] > 0, counts
    assert traced.stop(signal.SIGINT) == 0, traced.describe()


def test_sigint_during_a_hanging_export_exits_within_the_timeout(procs, tool, target_app,
                                                                  receiver_program):
    # The receiver holds every request for 30 s; the export timeout is 1 s.
    receiver = start_receiver(procs, receiver_program, "--delay-ms", "30000")
    work = procs.start_workload(target_app, ["--calls", "0", "--rate", "100"])
    env = dict(os.environ, OTEL_EXPORTER_OTLP_TIMEOUT="1000", OTEL_METRIC_EXPORT_INTERVAL="200")
    traced = procs.start_tool(tool, [
        "-p", work.pid, "-i", "1", f"--otlp={receiver.url('http/protobuf')}",
        f"{target_app}:slow_op"], env=env)
    work.start()
    # The receiver prints a request when it arrives, before holding it.
    receiver.wait_for_requests(1)
    time.sleep(0.3)
    started = time.monotonic()
    code = traced.stop(signal.SIGINT, timeout=15)
    took = time.monotonic() - started
    assert code == 0, traced.describe()
    # 1 s export timeout, plus detaching and printing.
    assert took < 3.5, f"exit took {took:.1f}s\n{traced.describe()}"
    assert "OTLP" in traced.text("stderr"), traced.describe()



def mapped_grpc(pid):
    return "libgrpc" in open(f"/proc/{pid}/maps").read()


def test_exporter_module_is_loaded_only_with_otlp(procs, tool, target_app, receiver_program):
    """gRPC, protobuf and libcurl live in funclatency-otlp.so, loaded for --otlp only
    (test_prometheus.py checks the same of cpp-httplib and --prometheus)."""
    receiver = start_receiver(procs, receiver_program)
    work = procs.start_workload(target_app, ["--calls", "0", "--rate", "100"])
    plain = procs.start_tool(tool, ["-p", work.pid, f"{target_app}:slow_op"])
    exporting = procs.start_tool(tool, ["-p", work.pid, f"--otlp={receiver.url('grpc')}",
                                        "--otlp-protocol", "grpc", f"{target_app}:slow_op"])
    assert not mapped_grpc(plain.pid)
    assert mapped_grpc(exporting.pid)
    assert plain.stop(signal.SIGINT) == 0, plain.describe()
    assert exporting.stop(signal.SIGINT) == 0, exporting.describe()


@pytest.mark.parametrize("option,module", [("--otlp", "funclatency-otlp.so"),
                                           ("--prometheus=0", "funclatency-prometheus.so")])
def test_missing_exporter_module_is_one_clear_error(procs, tool, target_app, tmp_path, option,
                                                    module):
    # A copy alone in a folder (a symlink would resolve back to the build).
    lonely = tmp_path / "funclatency"
    lonely.write_bytes(tool.read_bytes())
    lonely.chmod(0o755)
    result = procs.spawn([lonely, option, f"{target_app}:slow_op"])
    assert result.wait(30) == 1, result.describe()
    stderr = result.text("stderr")
    assert len(result.lines("stderr")) == 1, stderr
    assert f"{tmp_path}/{module}" in stderr and option.split("=")[0] in stderr, stderr
    # Without the option the same binary needs no module.
    result = procs.spawn([lonely, "-l", f"{target_app}:slow_op"])
    assert result.wait(30) == 0, result.describe()


def test_self_time_is_exported_as_its_own_metric(procs, tool, workload, receiver_program):
    # --self: function_self_time_ms, a histogram like the latency one, whose
    # buckets equal the tool's own --json self rows.
    receiver = start_receiver(procs, receiver_program)
    program = workload("self_time")
    work = procs.start_workload(program, ["--calls", "10"])
    traced = procs.start_tool(tool, [
        "-p", work.pid, "--mode", "kernel", "--json", "--self",
        f"--otlp={receiver.url('http/protobuf')}", "--otlp-protocol", "http/protobuf",
        f"{program}:parent_op", f"{program}:leaf_a"])
    work.start()
    work.finish()
    assert traced.wait(30) == 0, traced.describe()
    total = totals_by_symbol(traced.text("stdout"))["parent_op"]
    _, _, metrics = metrics_of(receiver.wait_for_requests(1)[-1]["request"])
    assert "function_self_time_ms" in metrics, sorted(metrics)
    points = metrics["function_self_time_ms"]["histogram"]["data_points"]
    point = next(p for p in points if attributes(p["attributes"])["symbol"] == "parent_op")
    rows = {row: int(c) for row, c in enumerate(point.get("bucket_counts", [])) if int(c)}
    assert rows == rows_from_json(total["self"]), (rows, total["self"])
    assert int(point["count"]) == total["self"]["count"] == 10
    assert point["sum"] == pytest.approx(total["self"]["sum_ns"] / 1e6, rel=1e-9)
    # leaf_a (300 us) is taken off parent_op's self time.
    assert total["self"]["p50_ns"] <= total["p50_ns"] - 250_000, total

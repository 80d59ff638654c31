"""OTLP over TLS, configured as the OpenTelemetry SDKs read it
(OTEL_EXPORTER_OTLP_[METRICS_]CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY,
INSECURE), against the real test receiver serving TLS with certificates made
by openssl: a private CA and mutual TLS, for http/protobuf, http/json and
grpc; what arrives equals the --json output. A receiver whose certificate
does not verify is refused with one clear line and the run goes on. Files
that cannot be read are one line and exit code 2, before anything attaches."""

import os
import re
import signal
import time

import pytest

from conftest import assert_refused, parse_json_records, rows_from_json, run_tool, totals_by_symbol
from test_otlp import exported_rows, metrics_of, receiver_program, start_receiver  # noqa: F401
from tls_certs import make_certificates

pytestmark = pytest.mark.bpf


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("otlp-certs"))


def tls_receiver(procs, program, certs, mutual):
    args = ["--tls-cert", certs.server_cert, "--tls-key", certs.server_key]
    if mutual:
        args += ["--tls-client-ca", certs.ca]
    return start_receiver(procs, program, *args)


def https_url(receiver, protocol):
    return receiver.url(protocol).replace("http://", "https://")


@pytest.mark.parametrize("protocol,mutual,variables", [
    ("http/protobuf", False, "general"),
    ("http/json", True, "metrics"),
    ("grpc", False, "metrics"),
    ("grpc", True, "general"),
    ("http/protobuf", True, "general"),
])
def test_exports_through_tls_equal_the_json_output(procs, tool, target_app, receiver_program,
                                                   certs, protocol, mutual, variables):
    receiver = tls_receiver(procs, receiver_program, certs, mutual)
    prefix = "OTEL_EXPORTER_OTLP_METRICS_" if variables == "metrics" else "OTEL_EXPORTER_OTLP_"
    env = dict(os.environ, **{f"{prefix}CERTIFICATE": str(certs.ca)})
    if mutual:
        env[f"{prefix}CLIENT_CERTIFICATE"] = str(certs.client_cert)
        env[f"{prefix}CLIENT_KEY"] = str(certs.client_key)
    work = procs.start_workload(target_app, ["--calls", "200", "--seed", "7"])
    traced = procs.start_tool(tool, [
        "-p", work.pid, "--json", f"--otlp={https_url(receiver, protocol)}", "--otlp-protocol",
        protocol, f"{target_app}:slow_op"], env=env)
    work.start()
    work.finish()
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    assert "OTLP" not in traced.text("stderr"), traced.describe()

    total = totals_by_symbol(traced.text("stdout"))["slow_op"]
    assert total["count"] == 200, total
    request = receiver.wait_for_requests(1)[-1]
    assert request["transport"] == ("grpc" if protocol == "grpc" else "http")
    _, _, metrics = metrics_of(request["request"])
    rows, point = exported_rows(metrics["function_latency_ms"], "explicit")
    assert rows == rows_from_json(total)
    assert int(point["count"]) == total["count"]
    assert point["sum"] == pytest.approx(total["sum_ns"] / 1e6, rel=1e-9)


def test_grpc_endpoint_without_a_scheme_uses_tls_unless_insecure(procs, tool, target_app,
                                                                 receiver_program, certs):
    receiver = tls_receiver(procs, receiver_program, certs, mutual=False)
    endpoint = f"127.0.0.1:{receiver.grpc_port}"  # no scheme: TLS, as OTEL_EXPORTER_OTLP_INSECURE=false
    env = dict(os.environ, OTEL_EXPORTER_OTLP_CERTIFICATE=str(certs.ca),
               OTEL_EXPORTER_OTLP_INSECURE="false")
    work = procs.start_workload(target_app, ["--calls", "50"])
    traced = procs.start_tool(tool, ["-p", work.pid, "--json", f"--otlp={endpoint}",
                                     "--otlp-protocol", "grpc", f"{target_app}:slow_op"], env=env)
    work.start()
    work.finish()
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    assert receiver.wait_for_requests(1)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_receiver_that_does_not_verify_is_one_line_and_the_run_goes_on(procs, tool, target_app,
                                                                       receiver_program, certs,
                                                                       protocol):
    receiver = tls_receiver(procs, receiver_program, certs, mutual=False)
    # The receiver's certificate chains to ca.pem; the tool trusts only other-ca.pem.
    # The final flush at exit is bounded by the export timeout: keep it well
    # inside the time the test gives the tool to exit (a sanitized build is slow).
    env = dict(os.environ, OTEL_EXPORTER_OTLP_CERTIFICATE=str(certs.other_ca),
               OTEL_METRIC_EXPORT_INTERVAL="300", OTEL_EXPORTER_OTLP_TIMEOUT="3000")
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    traced = procs.start_tool(tool, ["-p", work.pid, "--json", "-i", "0.5",
                                     f"--otlp={https_url(receiver, protocol)}", "--otlp-protocol",
                                     protocol, f"{target_app}:slow_op"], env=env)
    time.sleep(3)  # several exports, all refused
    assert traced.stop(signal.SIGINT) == 0, traced.describe()
    refused = [line for line in traced.text("stderr").splitlines() if "does not verify" in line]
    assert len(refused) == 1, traced.describe()
    assert re.search(rf"the certificate of https://127\.0\.0\.1:\d+\S* does not verify against "
                     rf"OTEL_EXPORTER_OTLP_CERTIFICATE {re.escape(str(certs.other_ca))}",
                     refused[0]), refused[0]
    records = parse_json_records(traced.text("stdout"))
    intervals = [r for r in records if r["type"] == "interval"]
    assert len(intervals) >= 4 and sum(r["count"] for r in intervals) > 0, traced.describe()
    assert receiver.requests() == []


@pytest.mark.parametrize("variables,pattern", [
    ({"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"},
     r"OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read /nonexistent/ca\.pem: No such file"),
    ({"OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE": "{client_cert}"},
     r"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE is set without a key"),
    ({"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "{client_cert}",
      "OTEL_EXPORTER_OTLP_CLIENT_KEY": "{client_cert}"},
     r"OTEL_EXPORTER_OTLP_CLIENT_KEY: \S+ holds no PEM private key"),
    ({"OTEL_EXPORTER_OTLP_INSECURE": "maybe"},
     r'OTEL_EXPORTER_OTLP_INSECURE: "maybe" is not true or false'),
])
def test_unusable_tls_settings_are_refused_before_attaching(tool, target_app, certs, variables,
                                                            pattern):
    env = dict(os.environ, **{k: v.format(client_cert=certs.client_cert)
                              for k, v in variables.items()})
    result = run_tool(tool, ["-v", "--otlp=https://127.0.0.1:1/v1/metrics",
                             f"{target_app}:slow_op"], env=env)
    assert_refused(result, pattern)

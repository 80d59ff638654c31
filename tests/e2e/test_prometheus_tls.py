"""`--web-config FILE` (Prometheus exporter-toolkit's web configuration)
against real clients, with certificates made by openssl: Debian's prometheus
scrapes through tls_config + basic_auth and the dashboards' PromQL query
answers; no credentials or a wrong password get 401; plain HTTP on the TLS
port gets no answer; with RequireAndVerifyClientCert a client without a
certificate (or with one from another CA) cannot connect. A bad web-config is
one line and exit code 2, before anything is attached. A certificate
rotated on disk serves the next handshake, without a restart; a broken one
leaves the previous one serving."""

import base64
import crypt
import hashlib
import http.client
import os
import shutil
import signal
import socket
import ssl

import pytest

from conftest import assert_refused, free_port, run_tool, wait_until
from test_prometheus import DASHBOARD_QUERY, PrometheusServer
from tls_certs import make_certificates, make_server_certificate

PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def bcrypt_hash(password):
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))


def write_web_config(certs, name="web.yml", auth_type="RequireAndVerifyClientCert", extra=""):
    """In the certificates' folder, naming them by relative paths, which
    exporter-toolkit takes from the config file's folder."""
    path = certs.ca.parent / name
    client = (f"  client_ca_file: {certs.ca.name}\n  client_auth_type: {auth_type}\n"
              if auth_type else "")
    path.write_text(
        "tls_server_config:\n"
        f"  cert_file: {certs.server_cert.name}\n  key_file: {certs.server_key.name}\n" + client +
        "basic_auth_users:\n"
        f"  scraper: {bcrypt_hash(PASSWORD)}\n"
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n" + extra)
    return path


def tls_context(certs, client_cert=True, other_client=False):
    context = ssl.create_default_context(cafile=str(certs.ca))
    if other_client:
        context.load_cert_chain(certs.other_client_cert, certs.other_client_key)
    elif client_cert:
        context.load_cert_chain(certs.client_cert, certs.client_key)
    return context


def get(port, context, user=None, password=None):
    """(status, headers) of GET /metrics over TLS."""
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    headers = {}
    if user is not None:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    try:
        connection.request("GET", "/metrics", headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    finally:
        connection.close()


def plain_http_answer(port):
    """What a plain-HTTP request to the port gets back (b"" when none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        try:
            return s.recv(100)
        except (ConnectionResetError, socket.timeout):
            return b""


@pytest.mark.bpf
def test_prometheus_scrapes_through_tls_and_basic_auth(procs, tool, target_app, tmp_path, certs):
    app = tmp_path / "target-app"
    shutil.copy2(target_app, app)
    port = free_port()
    web_config = write_web_config(certs)
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "--web-config",
                                     web_config, f"{app}:slow_op"])
    prometheus = PrometheusServer(
        procs, tmp_path, f"127.0.0.1:{port}",
        job="    scheme: https\n"
            f"    tls_config:\n      ca_file: {certs.ca}\n      cert_file: {certs.client_cert}\n"
            f"      key_file: {certs.client_key}\n"
            f"    basic_auth:\n      username: scraper\n      password: {PASSWORD}\n")
    work = procs.start_workload(app, ["--rate", "250", "--calls", "1500"])
    count_query = 'ebpf_function_latency_ms_count{symbol="slow_op"}'
    assert wait_until(lambda: prometheus.query(count_query), 20.0, interval=0.25), (
        f"targets: {prometheus.api('targets')}\n{traced.describe()}")
    work.start()
    returned = work.finish(timeout=60).function("slow_op")["returned"]
    assert wait_until(lambda: prometheus.scalar(count_query) >= returned, 10.0, interval=0.25)
    assert prometheus.scalar(count_query) == returned
    target = prometheus.api("targets")["activeTargets"][0]
    assert target["scrapeUrl"].startswith("https://"), target
    assert target["health"] == "up" and target["lastError"] == "", target
    p95 = prometheus.scalar(DASHBOARD_QUERY.format(q=0.95))
    assert 0 < p95 < 100, p95  # ms: target-app's slow_op takes 0.3-10 ms

    # The same endpoint to clients that lack something.
    context = tls_context(certs)
    status, headers = get(port, context, "scraper", PASSWORD)
    assert status == 200 and headers.get("X-Frame-Options") == "deny", headers
    status, headers = get(port, context)
    assert status == 401 and headers.get("WWW-Authenticate", "").startswith("Basic"), headers
    assert get(port, context, "scraper", "wrong password")[0] == 401
    assert get(port, context, "someone", PASSWORD)[0] == 401
    assert not plain_http_answer(port).startswith(b"HTTP/1.1 200")
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        get(port, tls_context(certs, client_cert=False), "scraper", PASSWORD)
    with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
        get(port, tls_context(certs, other_client=True), "scraper", PASSWORD)
    # A client that does not trust the server's CA gives up itself.
    with pytest.raises(ssl.SSLCertVerificationError):
        get(port, ssl.create_default_context(cafile=str(certs.other_ca)), "scraper", PASSWORD)
    # The run is still serving after all that.
    assert get(port, context, "scraper", PASSWORD)[0] == 200
    assert traced.stop(signal.SIGINT) == 0, traced.describe()


def test_client_certificate_is_optional_without_a_client_auth_type(procs, tool, target_app,
                                                                   certs):
    port = free_port()
    web_config = write_web_config(certs, name="no-client-auth.yml", auth_type=None)
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "--web-config",
                                     web_config, f"{target_app}:slow_op"])
    context = tls_context(certs, client_cert=False)
    assert get(port, context, "scraper", PASSWORD)[0] == 200
    assert get(port, context, "scraper", "nope")[0] == 401
    assert traced.stop(signal.SIGINT) == 0, traced.describe()


BAD_CONFIGS = {
    "unknown field": ("tls_server_config:\n  cert_fil: x.pem\n", r'unknown field "cert_fil"'),
    "not YAML": ("tls_server_config: [\n", r"not valid YAML: line \d+"),
    "bad hash": ("basic_auth_users:\n  alice: secret\n", r"basic_auth_users\.alice is not a "
                                                         r"bcrypt hash"),
    "missing key": ("tls_server_config:\n  cert_file: server.pem\n", r"missing key_file"),
    "bad auth type": ("tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n"
                      "  client_auth_type: Sometimes\n", r'client_auth_type "Sometimes"'),
    "unreadable cert": ("tls_server_config:\n  cert_file: nowhere.pem\n  key_file: server.key\n",
                        r"cannot read cert_file .*nowhere\.pem: No such file"),
    "key of another cert": ("tls_server_config:\n  cert_file: server.pem\n  key_file: client.key\n",
                            r"key_file .*client\.key is not the key of cert_file"),
    "forbidden header": ("http_server_config:\n  headers:\n    Server: x\n",
                         r'HTTP header "Server" can not be configured'),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_web_config_is_one_line_before_attaching(tool, target_app, certs, case):
    text, pattern = BAD_CONFIGS[case]
    path = certs.ca.parent / f"bad-{case.replace(' ', '-')}.yml"
    path.write_text(text)
    # -v would print a line per attached probe; assert_refused wants one line.
    result = run_tool(tool, ["-v", "--prometheus", f"127.0.0.1:{free_port()}", "--web-config",
                             path, f"{target_app}:slow_op"])
    assert_refused(result, r"--web-config", pattern)


def test_missing_web_config_is_refused(tool, target_app, tmp_path):
    result = run_tool(tool, ["--prometheus", f"127.0.0.1:{free_port()}", "--web-config",
                             tmp_path / "absent.yml", f"{target_app}:slow_op"])
    assert_refused(result, r"--web-config: cannot read .*absent\.yml: No such file")


# --- Certificate rotation ------------------------------------------------------


def served_certificate(port, ca):
    """SHA-256 of the certificate the endpoint presents in a new handshake,
    verified against `ca` for 127.0.0.1."""
    context = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return hashlib.sha256(tls.getpeercert(binary_form=True)).hexdigest()


def fingerprint(pem_path):
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem_path.read_text())).hexdigest()


def replace_file(path, content):
    """As a deployment writes a file: a new one renamed over the old."""
    staged = path.with_name(path.name + ".new")
    staged.write_bytes(content)
    os.replace(staged, path)


@pytest.mark.bpf
def test_a_certificate_rotated_on_disk_serves_the_next_handshake(procs, tool, target_app,
                                                                 tmp_path):
    certs = make_certificates(tmp_path / "certs")
    web_config = write_web_config(certs, name="rotating.yml", auth_type=None)
    port = free_port()
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "--web-config",
                                     web_config, f"{target_app}:slow_op"])
    context = tls_context(certs, client_cert=False)
    first = fingerprint(certs.server_cert)
    assert served_certificate(port, certs.ca) == first
    kept = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=5)
    login = {"Authorization": "Basic " + base64.b64encode(f"scraper:{PASSWORD}".encode()).decode()}
    kept.request("GET", "/", headers=login)  # a connection open across the rotation
    assert kept.getresponse().read().startswith(b"funclatency")

    # Renewed: the key, then the certificate, each renamed into place.
    new_cert, new_key = make_server_certificate(certs.ca.parent, "server-renewed")
    replace_file(certs.server_key, new_key.read_bytes())
    replace_file(certs.server_cert, new_cert.read_bytes())
    renewed = fingerprint(new_cert)
    assert renewed != first
    assert served_certificate(port, certs.ca) == renewed
    assert get(port, context, "scraper", PASSWORD)[0] == 200
    kept.request("GET", "/", headers=login)  # it goes on with the certificate it began with
    assert kept.getresponse().status == 200
    kept.close()
    traced.wait_for_line("stderr", r"TLS files changed on disk", 5)

    # A broken certificate (half written, say): the renewed one keeps serving,
    # and the breakage is said once, however many clients come.
    replace_file(certs.server_cert, b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n")
    for _ in range(5):
        assert served_certificate(port, certs.ca) == renewed
    assert get(port, context, "scraper", PASSWORD)[0] == 200
    # A certificate whose key is not there yet: kept too, said once more.
    later_cert, later_key = make_server_certificate(certs.ca.parent, "server-later")
    replace_file(certs.server_cert, later_cert.read_bytes())
    assert served_certificate(port, certs.ca) == renewed
    # Said before that handshake was answered; the test's reader of the
    # agent's stderr may still be behind (CI, under load).
    traced.wait_for_line("stderr", r"is not the key of", 5)
    refusals = [line for line in traced.lines("stderr") if "cannot be used" in line]
    assert len(refusals) == 2, traced.describe()
    assert "server.pem" in refusals[0] and "holds no PEM certificate" in refusals[0], refusals
    assert "is not the key of" in refusals[1], refusals
    # Its key arrives: the next handshake has it. No restart throughout.
    replace_file(certs.server_key, later_key.read_bytes())
    assert served_certificate(port, certs.ca) == fingerprint(later_cert)
    assert get(port, context, "scraper", PASSWORD)[0] == 200
    assert traced.popen.poll() is None
    assert traced.stop(signal.SIGINT) == 0, traced.describe()

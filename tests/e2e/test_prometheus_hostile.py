"""The /metrics endpoint under hostile clients: half-open requests, idle
keep-alive connections, a client sending one header byte a second, a 1 MB
header and 1,000 connections opened at once, all held while a scraper asks
for /metrics. Every scrape gets 200 within SCRAPE_BOUND, and funclatency's
RSS, thread count and open descriptors stay bounded (the server's limits are
in src/output/prometheus/http_server.h). Then, at 64 descriptors and over
plain HTTP and TLS alike: silent clients beyond the limit and 10,000
pipelined requests, with every scrape under 100 ms and the server thread's
CPU measured; smuggling shapes refused; no request read with privileges and
no capability in the server thread; a password guesser at full speed that
neither locks out a new scraper nor learns which users exist."""

import base64
import itertools
import os
import re
import resource
import select
import socket
import ssl
import statistics
import threading
import time

import pytest

from conftest import free_port, thread_named, wait_until
from tls_certs import make_certificates

# What a scrape may take while all the attacks run (measured: < 0.02 s).
SCRAPE_BOUND = 1.0
# The server keeps at most 128 connections; the rest of the descriptors are
# the tool's own (BPF objects, links, the binary's files).
MAX_OPEN_FDS = 128 + 64
MAX_THREADS = 3
MAX_RSS_GROWTH_KB = 16 * 1024
# http_server.h: the whole request within 10 s.
REQUEST_DEADLINE = 10.0


def proc_status(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return {"rss_kb": int(fields["VmRSS"].split()[0]), "threads": int(fields["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


class Endpoint:
    """How a client reaches the endpoint: plain HTTP, or TLS (`--web-config`
    with certificates made by openssl, no client certificate asked)."""

    def __init__(self, scheme, folder=None):
        self.scheme = scheme
        self.args = []
        self.context = None
        if scheme == "https":
            certs = make_certificates(folder / "certs")
            web_config = folder / "web.yml"
            web_config.write_text(f"tls_server_config:\n  cert_file: {certs.server_cert}\n"
                                  f"  key_file: {certs.server_key}\n")
            self.args = ["--web-config", str(web_config)]
            self.context = ssl.create_default_context(cafile=str(certs.ca))

    def connect(self, port, timeout=3.0):
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        if self.context:
            try:
                s = self.context.wrap_socket(s, server_hostname="127.0.0.1")
            except BaseException:
                s.close()
                raise
        return s


PLAIN = Endpoint("http")


def scrape(port, timeout=3.0, endpoint=PLAIN):
    """(status line, seconds) of one GET /metrics on a new connection."""
    start = time.monotonic()
    try:
        with endpoint.connect(port, timeout) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: funclatency\r\nConnection: close\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        status = data.split(b"\r\n", 1)[0].decode(errors="replace")
    except OSError as error:
        status = f"no answer: {error!r}"
    return status, time.monotonic() - start


class Attack:
    """Holds the hostile connections until closed."""

    def __init__(self, port):
        self.port = port
        self.sockets = []
        self.events = {}
        self.stop = threading.Event()

    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        self.sockets.append(s)
        return s

    def half_open(self, count):
        for _ in range(count):
            self.connect().sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")

    def idle_keep_alive(self, count):
        for _ in range(count):
            s = self.connect()
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1 << 20)  # the answer; the connection stays open

    def slow_header(self):
        """One header byte a second; records when the server cut it off."""
        s = self.connect()
        started = time.monotonic()

        def drip():
            payload = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000
            for byte in payload:
                if self.stop.is_set():
                    return
                try:
                    s.send(bytes([byte]))
                except OSError:
                    break
                if self.stop.wait(1.0):
                    return
            self.events["slow_cut_after"] = time.monotonic() - started

        threading.Thread(target=drip, daemon=True).start()

    def huge_header(self):
        s = self.connect()

        def send():
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) +
                          b"\r\n\r\n")
                self.events["huge_answer"] = s.recv(200).split(b"\r\n", 1)[0].decode()
            except OSError as error:
                self.events["huge_answer"] = f"cut: {error!r}"

        threading.Thread(target=send, daemon=True).start()

    def flood(self, count):
        for _ in range(count):
            self.sockets.append(socket.create_connection(("127.0.0.1", self.port), timeout=5))

    def close(self):
        self.stop.set()
        for s in self.sockets:
            s.close()


@pytest.mark.bpf
def test_scrapes_answer_while_clients_misbehave(procs, tool, target_app):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "-p", work.pid,
                                     ":slow_op"])
    assert wait_until(lambda: scrape(port)[0].endswith("200 OK"), 10.0, interval=0.2), \
        traced.describe()
    before = proc_status(traced.pid)
    attack = Attack(port)
    timings = []
    worst = dict(before)

    def scrapes(step, count=10):
        for _ in range(count):
            status, seconds = scrape(port)
            timings.append((step, status, seconds))
            assert status == "HTTP/1.1 200 OK", f"{step}: {status}\n{traced.describe()}"
            assert seconds < SCRAPE_BOUND, f"{step}: a scrape took {seconds:.3f}s"
            now = proc_status(traced.pid)
            for key in worst:
                worst[key] = max(worst[key], now[key])
            time.sleep(0.05)

    try:
        attack.half_open(64)
        scrapes("64 half-open requests")
        attack.idle_keep_alive(64)
        scrapes("+ 64 idle keep-alive connections")
        attack.slow_header()
        attack.huge_header()
        scrapes("+ a header byte a second and a 1 MB header")
        attack.flood(1000)
        scrapes("+ 1000 connections opened at once", count=20)
        # The slow client runs into the request deadline while scrapes go on.
        deadline = time.monotonic() + REQUEST_DEADLINE + 3
        while "slow_cut_after" not in attack.events and time.monotonic() < deadline:
            scrapes("while the slow client drips", count=1)
    finally:
        attack.close()

    print("worst scrape: %.4fs; before %s; worst %s; events %s" %
          (max(t for _, _, t in timings), before, worst, attack.events))
    assert worst["threads"] <= MAX_THREADS, worst
    assert worst["fds"] <= MAX_OPEN_FDS, worst
    assert worst["rss_kb"] - before["rss_kb"] < MAX_RSS_GROWTH_KB, (before, worst)
    # The 1 MB header is refused (431, or cut), never answered.
    assert not attack.events.get("huge_answer", "").endswith("200 OK"), attack.events
    # The slow client is cut off by the request deadline, not served.
    assert attack.events.get("slow_cut_after", 1e9) < REQUEST_DEADLINE + 2.5, attack.events
    assert scrape(port)[0] == "HTTP/1.1 200 OK"
    assert traced.stop() == 0, traced.describe()


# --- Out of descriptors -------------------------------------------------------

# A low open-file limit, soft and hard, so funclatency cannot raise it.
LOW_NOFILE = 64
HELD_CONNECTIONS = 80
# A well-behaved scrape under the descriptor shortage.
SHORTAGE_SCRAPE_BOUND = 0.1
# The server thread's CPU time over wall time while the connections are held
# (it spun at ~56% before the fix: accept4 failed, the listener stayed readable).
MAX_SERVER_CPU_SHARE = 0.1
# Answering a pipelined request, TLS included (measured: see the test's output).
MAX_SERVER_CPU_PER_REQUEST = 100e-6
PIPELINED = 10_000


def read_answer(s):
    """One whole answer (head and Content-Length body) from a kept-alive socket."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    while len(body) < length:
        chunk = s.recv(4096)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def server_thread(pid):
    """The tid of the /metrics server's thread (named fl-http)."""
    return thread_named(pid, "fl-http")


def thread_cpu_seconds(pid, tid):
    """utime + stime of one thread (/proc/PID/task/TID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/task/{tid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_file_limits(pid):
    for line in open(f"/proc/{pid}/limits"):
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    return None


@pytest.mark.bpf
def test_soft_open_file_limit_is_raised_to_the_hard_one(procs, tool, target_app):
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    traced = procs.start_tool(
        tool, ["--prometheus", f"127.0.0.1:{free_port()}", "-p", work.pid, ":slow_op"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LOW_NOFILE, 4096)))
    assert open_file_limits(traced.pid) == (4096, 4096)
    assert traced.stop() == 0, traced.describe()


def send_pipelined(s, payload, timeout=60.0):
    """Writes `payload` while reading what comes back, on one thread (an
    SSL socket is not to be used from two), until the server closes; the
    bytes received."""
    s.setblocking(False)
    view, sent, data = memoryview(payload), 0, bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        writing = sent < len(payload)
        select.select([s], [s] if writing else [], [], 0.05)
        if writing:
            try:
                sent += s.send(view[sent:sent + 65536])
            except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                pass
        try:
            while chunk := s.recv(1 << 20):
                data += chunk
            return bytes(data)  # closed: the last request asked for it
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except (ConnectionResetError, ssl.SSLError):
            return bytes(data)
    return bytes(data)


# alone: every scrape is held to 100 ms while 10,000 requests are answered
# over TLS; beside the other workers and the build the server thread got a
# fifth of a CPU (0.16 s of CPU in 0.77 s) and one scrape took 0.118 s.
# HttpServer.APipelineTakesTurnsWithOtherConnections checks the fairness
# itself without a clock shared with other tests.
@pytest.mark.bpf
@pytest.mark.alone
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_out_of_descriptors_the_server_neither_spins_nor_stops_answering(procs, tool, target_app,
                                                                          tmp_path, scheme):
    """At LOW_NOFILE descriptors, soft and hard: silent clients (over TLS,
    connections that never send a byte of their handshake) held beyond the
    limit, then 10,000 requests pipelined in one connection on top; a
    well-behaved scrape on a new connection and one kept alive are answered
    throughout, and the server thread's CPU is measured."""
    endpoint = Endpoint(scheme, tmp_path)
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(
        tool, ["--prometheus", f"127.0.0.1:{port}", *endpoint.args, "-p", work.pid, ":slow_op"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LOW_NOFILE, LOW_NOFILE)))
    assert open_file_limits(traced.pid) == (LOW_NOFILE, LOW_NOFILE)
    assert wait_until(lambda: scrape(port, endpoint=endpoint)[0].endswith("200 OK"), 10.0,
                      interval=0.2), traced.describe()
    tid = server_thread(traced.pid)
    assert tid, "no fl-http thread"
    # A keep-alive client that stays connected must be answered throughout too.
    kept = endpoint.connect(port)
    kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_answer(kept).startswith(b"HTTP/1.1 200 OK")
    attack = Attack(port)
    timings = []

    def well_behaved(step):
        timings.append((step, *scrape(port, timeout=2.0, endpoint=endpoint)))
        kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_answer(kept).startswith(b"HTTP/1.1 200 OK"), step

    try:
        attack.flood(HELD_CONNECTIONS)  # held open, silent: more than the process may have
        time.sleep(0.3)
        cpu_before, wall_before = thread_cpu_seconds(traced.pid, tid), time.monotonic()
        for round in range(30):
            attack.flood(10)  # and more keep coming
            well_behaved(f"silent clients, round {round}")
            time.sleep(0.1)
        cpu = thread_cpu_seconds(traced.pid, tid) - cpu_before
        wall = time.monotonic() - wall_before
        fds = len(os.listdir(f"/proc/{traced.pid}/fd"))

        # On top: 10,000 requests in one write, the last asking to close.
        request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        payload = (request * (PIPELINED - 1) +
                   b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        piped = {}

        def pipeline():
            started = time.monotonic()
            with endpoint.connect(port, timeout=10) as s:
                piped["answer"] = send_pipelined(s, payload)
            piped["seconds"] = time.monotonic() - started

        attack.flood(10)
        pipe_cpu_before = thread_cpu_seconds(traced.pid, tid)
        piper = threading.Thread(target=pipeline, daemon=True)
        piper.start()
        while piper.is_alive():
            well_behaved("10,000 pipelined requests")
            time.sleep(0.02)
        piper.join()
        pipe_cpu = thread_cpu_seconds(traced.pid, tid) - pipe_cpu_before
    finally:
        attack.close()
        kept.close()
    answered = piped.get("answer", b"").count(b"HTTP/1.1 200 OK\r\n")
    print(f"{scheme}: {len(attack.sockets)} connections held at {LOW_NOFILE} descriptors: worst "
          f"scrape {max(t for _, _, t in timings):.4f}s over {len(timings)}, server thread "
          f"{cpu:.3f}s CPU in {wall:.2f}s, {fds} descriptors open; {answered} of {PIPELINED} "
          f"pipelined requests answered in {piped.get('seconds', 0):.2f}s for {pipe_cpu:.3f}s "
          f"of the server thread's CPU")
    for step, status, seconds in timings:
        assert status == "HTTP/1.1 200 OK", (step, status, traced.describe())
        assert seconds < SHORTAGE_SCRAPE_BOUND, (step, seconds, timings)
    assert cpu / wall < MAX_SERVER_CPU_SHARE, (cpu, wall)
    assert fds <= LOW_NOFILE
    assert answered == PIPELINED, (answered, traced.describe())
    assert pipe_cpu < PIPELINED * MAX_SERVER_CPU_PER_REQUEST, pipe_cpu
    assert scrape(port, endpoint=endpoint)[0] == "HTTP/1.1 200 OK"
    assert traced.stop() == 0, traced.describe()


# --- Framing: pipelining and smuggling shapes ----------------------------------

# glibc gives every thread RLIMIT_STACK's size: small enough that recursing
# once per pipelined request (as the server once did) overflows it.
SMALL_STACK = 256 * 1024

SMUGGLING_SHAPES = {
    "Transfer-Encoding": b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
    "duplicate Transfer-Encoding":
        b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Transfer-Encoding: identity\r\n\r\n",
    "empty Transfer-Encoding, then chunked":
        b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n",
    "Transfer-Encoding with Content-Length":
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n",
    "obs-fold": b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n\r\n",
    "obs-fold with a tab": b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\n\r\n",
    "bare LF": b"GET / HTTP/1.1\nHost: x\n\n",
    "a head ending LF CR LF": b"GET / HTTP/1.1\r\nHost: x\n\r\n",
    "bare CR": b"GET / HTTP/1.1\r\nHost: x\rX-A: b\r\n\r\n",
    "HTTP/1.1 without Host": b"GET /metrics HTTP/1.1\r\n\r\n",
    "two Host headers": b"GET /metrics HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
}


def exchange(port, payload, timeout=2.0):
    """Sends `payload` on a new connection; (what came back, seconds)."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except (socket.timeout, ConnectionResetError):
            pass
    return data, time.monotonic() - start


@pytest.mark.bpf
def test_pipelined_requests_are_answered_and_smuggling_shapes_refused(procs, tool, target_app):
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(
        tool, ["--prometheus", f"127.0.0.1:{port}", "-p", work.pid, ":slow_op"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_STACK, (SMALL_STACK, SMALL_STACK)))
    assert wait_until(lambda: scrape(port)[0].endswith("200 OK"), 10.0, interval=0.2), \
        traced.describe()

    # 10,000 requests in one write, the last asking to close: every one answered, in order.
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    payload = request * (PIPELINED - 1) + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        sender = threading.Thread(target=s.sendall, args=(payload,), daemon=True)
        started = time.monotonic()
        sender.start()
        data = b""
        try:
            while chunk := s.recv(1 << 20):
                data += chunk
        except ConnectionResetError:
            pass  # counted below; a crashed server resets the connection
        seconds = time.monotonic() - started
        sender.join(5)
    answered = data.count(b"HTTP/1.1 200 OK\r\n")
    print(f"{answered} of {PIPELINED} pipelined requests answered in {seconds:.2f}s")
    assert traced.popen.poll() is None, f"exit {traced.popen.returncode}\n{traced.describe()}"
    assert answered == PIPELINED, (answered, traced.describe())

    for shape, payload in SMUGGLING_SHAPES.items():
        answer, seconds = exchange(port, payload)
        assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n"), (shape, answer[:200])
        assert b"200 OK" not in answer, (shape, answer)  # nothing read past it
        assert seconds < 1.0, (shape, seconds)  # refused at once, not at a deadline
    assert scrape(port)[0] == "HTTP/1.1 200 OK"
    assert traced.stop() == 0, traced.describe()


# --- No network byte read with privileges --------------------------------------


def capabilities(pid, tid=None, which="CapEff"):
    """CapEff (or CapPrm...) of a process (its main thread) or of one of its threads."""
    path = f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status"
    with open(path) as status:
        for line in status:
            if line.startswith(which + ":"):
                return int(line.split()[1], 16)
    return None


@pytest.mark.bpf
def test_no_request_is_read_before_the_privileges_are_dropped(procs, tool, target_app):
    """The port is bound before attach (errors come first), but a client that
    connects while funclatency attaches is answered only after the drop, and
    the server thread never holds a capability."""
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.spawn([tool, "--prometheus", f"127.0.0.1:{port}", "-p", work.pid, ":*_op"])
    deadline = time.monotonic() + 30
    client = None
    while client is None:
        assert time.monotonic() < deadline and traced.popen.poll() is None, traced.describe()
        try:
            client = socket.create_connection(("127.0.0.1", port), timeout=1)
        except ConnectionRefusedError:
            time.sleep(0.001)
    connected_while_privileged = capabilities(traced.pid) != 0
    client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    client.setblocking(False)
    asked = time.monotonic()
    server_caps = set()
    answer = b""
    while time.monotonic() < deadline:
        try:
            answer = client.recv(65536)  # the answer first, then the capabilities
        except BlockingIOError:
            pass
        main_caps = capabilities(traced.pid)
        tid = server_thread(traced.pid)
        if tid:
            server_caps.add(capabilities(traced.pid, tid))
        if answer:
            assert main_caps == 0, f"answered with capabilities {main_caps:#x}"
            break
        time.sleep(0.0005)
    client.close()
    print(f"connected {'during' if connected_while_privileged else 'after'} attach; "
          f"answered {time.monotonic() - asked:.3f}s after asking; server thread CapEff "
          f"{sorted(hex(c) for c in server_caps)}")
    assert connected_while_privileged, "connected only after the drop: attach was too quick"
    assert answer.startswith(b"HTTP/1.1 200 OK"), (answer, traced.describe())
    assert server_caps == {0}, [hex(c) for c in server_caps]
    traced.wait_for_line("stderr", r"^Tracing ", 10)
    assert traced.stop() == 0, traced.describe()


# --- Basic auth under a password guesser ---------------------------------------

# bcrypt cost 10, as htpasswd -B makes by default: tens of ms a check here.
BCRYPT_ROUNDS = 1 << 10
# Parallel connections of one address, each sending as fast as it is
# answered: thousands of guesses a second, all but a few turned away (503)
# because the address already has its 2 checks queued.
GUESSERS = 8
NEW_SCRAPERS = 5
# A new scraper's first login while the guesser runs: one bcrypt of its own
# and at most one of the guesser's ahead of it in the worker's turns, on two
# cores shared with the guesser (measured 0.3-0.55 s). With one queue for
# every address it would be turned away (503) as long as the guesser goes on.
LOGIN_BOUND = 1.5
TIMING_SAMPLES = 15


def bcrypt_hash(password):
    import crypt  # deprecated in Python 3.11, enough for a test on Debian 12
    return crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=BCRYPT_ROUNDS))


def basic_auth(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def authorized_request(s, credentials):
    """One GET /metrics on a kept-alive socket; (status code, seconds)."""
    started = time.monotonic()
    s.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: {credentials}\r\n\r\n"
              .encode())
    answer = read_answer(s)
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return status, time.monotonic() - started


def connect_from(source, port):
    """A connection to 127.0.0.1:port from source address `source`: the
    server queues bcrypt checks per client address."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    return s


@pytest.mark.bpf
def test_a_password_guesser_neither_locks_out_a_new_scraper_nor_learns_the_users(
        procs, tool, target_app, tmp_path):
    users = {f"scraper{i}": f"password {i}" for i in range(NEW_SCRAPERS)}
    web_config = tmp_path / "web.yml"
    web_config.write_text("basic_auth_users:\n" + "".join(
        f"  {user}: {bcrypt_hash(password)}\n" for user, password in users.items()))
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "--web-config",
                                     web_config, "-p", work.pid, ":slow_op"])

    # Timing first, on a quiet server: a known user's wrong password and an
    # unknown user, interleaved, each credential new (no remembered verdict).
    known, unknown = [], []
    with connect_from("127.0.0.3", port) as s:
        for i in range(TIMING_SAMPLES):
            for user, times in (("scraper0", known), (f"nobody{i}", unknown)):
                status, seconds = authorized_request(s, basic_auth(user, f"guess {i}"))
                assert status == 401, (user, status)
                times.append(seconds)
    known_median, unknown_median = statistics.median(known), statistics.median(unknown)

    # A guesser at full speed from 127.0.0.1.
    stop = threading.Event()
    counts = {"401": 0, "503": 0, "other": 0}
    lock = threading.Lock()

    def guess(worker):
        with connect_from("127.0.0.1", port) as s:
            for i in itertools.count():
                if stop.is_set():
                    return
                status, _ = authorized_request(s, basic_auth("scraper0", f"guess {worker} {i}"))
                with lock:
                    counts[str(status) if status in (401, 503) else "other"] += 1
                # 503 (its queue is full) asks it to wait a second: it does not.

    guessers = [threading.Thread(target=guess, args=(w,), daemon=True) for w in range(GUESSERS)]
    for thread in guessers:
        thread.start()
    logins = []
    try:
        time.sleep(1.0)  # its queue is full by now
        for user, password in users.items():
            with connect_from("127.0.0.2", port) as s:  # a scraper, new to the server
                status, seconds = authorized_request(s, basic_auth(user, password))
                while status == 503 and seconds < LOGIN_BOUND:  # told to retry: it does
                    time.sleep(0.05)
                    status, more = authorized_request(s, basic_auth(user, password))
                    seconds += 0.05 + more
                logins.append((user, status, seconds))
    finally:
        stop.set()
        for thread in guessers:
            thread.join(10)
    print(f"refusal medians: known user {known_median:.4f}s, unknown user {unknown_median:.4f}s; "
          f"guesser answers {counts}; new scrapers' logins "
          f"{[(u, s, round(t, 4)) for u, s, t in logins]}")
    for user, status, seconds in logins:
        assert status == 200, logins
        assert seconds < LOGIN_BOUND, logins
    # It was at full speed, and checked (bcrypt) between the scrapers' logins.
    assert counts["503"] >= 1000 and counts["401"] >= 5 and counts["other"] == 0, counts
    assert known_median > 0.005, known  # bcrypt ran
    assert 0.7 < unknown_median / known_median < 1.4, (known, unknown)
    assert traced.stop() == 0, traced.describe()


@pytest.mark.bpf
def test_the_server_thread_holds_no_capability_the_main_thread_keeps(procs, tool, target_app):
    """--slowest keeps, permitted on the main thread, what reading a stack
    needs. A thread started from it would inherit them; the server thread
    drops them, so a flaw in what parses requests cannot raise them."""
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(tool, ["--prometheus", f"127.0.0.1:{port}", "--slowest", "1",
                                     "-p", work.pid, ":slow_op"])
    assert wait_until(lambda: scrape(port)[0].endswith("200 OK"), 10.0, interval=0.2), \
        traced.describe()
    tid = server_thread(traced.pid)
    kept = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")  # while it serves this one
        assert read_answer(kept).startswith(b"HTTP/1.1 200 OK")
        main = {which: capabilities(traced.pid, which=which) for which in ("CapEff", "CapPrm")}
        server = {which: capabilities(traced.pid, tid, which) for which in ("CapEff", "CapPrm")}
    finally:
        kept.close()
    print(f"main thread {main}, server thread {server}")
    # Kept for --slowest (effective only while the main thread names a stack).
    assert main["CapPrm"] != 0, main
    assert server == {"CapEff": 0, "CapPrm": 0}, server
    assert traced.stop() == 0, traced.describe()

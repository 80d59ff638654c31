"""The /metrics endpoint under hostile clients: half-open requests, idle
keep-alive connections, a client sending one header byte a second, a 1 MB
header and 1,000 connections opened at once, all held while a scraper asks
for /metrics. Every scrape gets 200 within SCRAPE_BOUND, and funclatency's
RSS, thread count and open descriptors stay bounded (the server's limits are
in src/output/prometheus/http_server.h)."""

import os
import re
import resource
import socket
import threading
import time

import pytest

from conftest import free_port, wait_until

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


def scrape(port, timeout=3.0):
    """(status line, seconds) of one GET /metrics on a new connection."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
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


# --- Out of descriptors (issue 24) --------------------------------------------

# A low open-file limit, soft and hard, so funclatency cannot raise it.
LOW_NOFILE = 64
HELD_CONNECTIONS = 80
# A well-behaved scrape under the descriptor shortage.
SHORTAGE_SCRAPE_BOUND = 0.1
# The server thread's CPU time over wall time while the connections are held
# (it spun at ~56% before the fix: accept4 failed, the listener stayed readable).
MAX_SERVER_CPU_SHARE = 0.1


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
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                if comm.read().strip() == "fl-http":
                    return int(tid)
        except FileNotFoundError:
            continue
    return None


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


@pytest.mark.bpf
def test_out_of_descriptors_the_server_neither_spins_nor_stops_answering(procs, tool,
                                                                          target_app):
    work = procs.start_workload(target_app, ["--rate", "200"], wait_signal=False)
    port = free_port()
    traced = procs.start_tool(
        tool, ["--prometheus", f"127.0.0.1:{port}", "-p", work.pid, ":slow_op"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LOW_NOFILE, LOW_NOFILE)))
    assert open_file_limits(traced.pid) == (LOW_NOFILE, LOW_NOFILE)
    assert wait_until(lambda: scrape(port)[0].endswith("200 OK"), 10.0, interval=0.2), \
        traced.describe()
    tid = server_thread(traced.pid)
    assert tid, "no fl-http thread"
    # A keep-alive client that stays connected must be answered throughout too.
    kept = socket.create_connection(("127.0.0.1", port), timeout=3)
    kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert read_answer(kept).startswith(b"HTTP/1.1 200 OK")
    attack = Attack(port)
    timings = []
    try:
        attack.flood(HELD_CONNECTIONS)  # held open, silent: more than the process may have
        time.sleep(0.3)
        cpu_before, wall_before = thread_cpu_seconds(traced.pid, tid), time.monotonic()
        for round in range(30):
            attack.flood(10)  # and more keep coming
            timings.append(scrape(port, timeout=2.0))
            kept.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_answer(kept).startswith(b"HTTP/1.1 200 OK"), f"round {round}"
            time.sleep(0.1)
        cpu = thread_cpu_seconds(traced.pid, tid) - cpu_before
        wall = time.monotonic() - wall_before
        fds = len(os.listdir(f"/proc/{traced.pid}/fd"))
    finally:
        attack.close()
        kept.close()
    print(f"{len(attack.sockets)} connections held at {LOW_NOFILE} descriptors: worst scrape "
          f"{max(t for _, t in timings):.4f}s, server thread {cpu:.3f}s CPU in {wall:.2f}s, "
          f"{fds} descriptors open")
    for status, seconds in timings:
        assert status == "HTTP/1.1 200 OK", (status, traced.describe())
        assert seconds < SHORTAGE_SCRAPE_BOUND, timings
    assert cpu / wall < MAX_SERVER_CPU_SHARE, (cpu, wall)
    assert fds <= LOW_NOFILE
    assert scrape(port)[0] == "HTTP/1.1 200 OK"
    assert traced.stop() == 0, traced.describe()


# --- Framing: pipelining and smuggling shapes (issue 24) -----------------------

PIPELINED = 10_000
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


# --- No network byte read with privileges (issue 24) ---------------------------


def capabilities(pid, tid=None):
    """CapEff of a process (its main thread) or of one of its threads."""
    path = f"/proc/{pid}/task/{tid}/status" if tid else f"/proc/{pid}/status"
    with open(path) as status:
        for line in status:
            if line.startswith("CapEff:"):
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

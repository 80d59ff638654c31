"""Fixtures and helpers for funclatency's end-to-end tests.

The tests run the real tool against real processes (examples/target-app and
the workloads in tests/programs/workloads) and compare what it reports with
the ground truth those programs measure themselves.

Environment:
  FUNCLATENCY_BUILD_DIR    build directory (default: build/ at the top of this repository)
  FUNCLATENCY_REQUIRE_BPF  "1": a test that needs BPF fails instead of skipping
"""

import ctypes
import functools
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

DEFAULT_BUILD_DIR = Path(__file__).resolve().parents[2] / "build"
TOOL_ATTACH_TIMEOUT = 30.0  # seconds from start to the "Tracing " line
READY_TIMEOUT = 10.0  # seconds for a workload to print "ready pid=N"
EXIT_TIMEOUT = 10.0  # seconds for a process to exit once asked to


def pytest_configure(config):
    config.addinivalue_line("markers", "bpf: needs permission to load BPF and attach uprobes")
    config.addinivalue_line(
        "markers", "alone: holds a program's own clocks to bounds that other tests' load on "
        "the CPUs can break; ./scripts/test runs these after the parallel run, one at a time, "
        "with nothing beside them")


# The files that take longest (seconds of a run on this kind of machine, 2
# CPUs), collected first: with a worker per CPU (scripts/test, --dist
# loadfile) a long file handed out last would end the run alone.
LONGEST_FILES = ("test_deploy.py",  # ~70 s with its base image cached, ~3 min without
                 "test_docs.py",  # ~75 s
                 "test_report_diff.py",  # ~55 s
                 "test_agent_metrics.py", "test_follow.py", "test_robustness.py",  # ~30 s each
                 "test_prometheus.py", "test_report_browser.py", "test_prometheus_hostile.py")


def pytest_collection_modifyitems(config, items):
    """Longest files first, then the rest in pytest's order."""
    rank = {name: i for i, name in enumerate(LONGEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def build_dir() -> Path:
    return Path(os.environ.get("FUNCLATENCY_BUILD_DIR", DEFAULT_BUILD_DIR)).resolve()


def require_bpf_strictly() -> bool:
    return os.environ.get("FUNCLATENCY_REQUIRE_BPF") == "1"


# --- Can this process load BPF and attach uprobes? --------------------------

CAP_PERFMON = 38
CAP_BPF = 39
BPF_MAP_CREATE = 0
BPF_MAP_TYPE_ARRAY = 2
SYS_BPF_X86_64 = 321


def _effective_capabilities() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def _try_bpf_map_create() -> int:
    """Creates (and closes) a one-entry array map; returns 0 or the errno."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 32)()  # union bpf_attr, zero-filled
    attr[0], attr[1], attr[2], attr[3] = BPF_MAP_TYPE_ARRAY, 4, 4, 1
    fd = libc.syscall(SYS_BPF_X86_64, BPF_MAP_CREATE, ctypes.byref(attr), ctypes.sizeof(attr))
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def bpf_unavailable_reason():
    """None when BPF uprobes can be used here, else why not."""
    caps = _effective_capabilities()
    needed = (1 << CAP_BPF) | (1 << CAP_PERFMON)
    if os.geteuid() != 0 and caps & needed != needed:
        return "needs root or CAP_BPF+CAP_PERFMON"
    if not Path("/sys/bus/event_source/devices/uprobe").exists():
        return "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)"
    err = _try_bpf_map_create()
    if err != 0:
        return f"bpf(BPF_MAP_CREATE) failed: {os.strerror(err)}"
    return None


_bpf_reason_cache = []


def pytest_runtest_setup(item):
    if item.get_closest_marker("bpf") is None:
        return
    if not _bpf_reason_cache:
        _bpf_reason_cache.append(bpf_unavailable_reason())
    reason = _bpf_reason_cache[0]
    if reason is None:
        return
    if require_bpf_strictly():
        pytest.fail(f"BPF is required (FUNCLATENCY_REQUIRE_BPF=1) but unavailable: {reason}")
    pytest.skip(f"BPF not permitted: {reason}")


# --- Binaries -----------------------------------------------------------------


def built(path: Path, target: str = None) -> Path:
    """`path`, failing the test when it is not built; `target` is the CMake
    target that builds it."""
    if not path.is_file():
        how = f"cmake --build {build_dir()}" + (f" --target {target}" if target else "")
        pytest.fail(f"{path} is not built; build it ({how}) or set FUNCLATENCY_BUILD_DIR")
    return path


@pytest.fixture(scope="session")
def worker_copy():
    """worker_copy(path): `path` when the tests run one at a time; under
    pytest-xdist (-n N, as ./scripts/test runs them), this worker's own copy of
    that self-contained program, same file name, other inode. Uprobes belong
    to a file, so a test tracing it system-wide would count the calls of
    another worker's processes running the same file; with a copy per worker
    it counts only its own. The copies live in a directory every user may
    read (the privilege tests run the tool as nobody), removed at the end."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield lambda path: path
        return
    directory = Path(tempfile.mkdtemp(prefix=f"funclatency-{os.environ['PYTEST_XDIST_WORKER']}-"))
    directory.chmod(0o755)

    def copy(path: Path) -> Path:
        own = directory / path.name
        if not own.exists():
            shutil.copy2(path, own)
        return own

    yield copy
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def tool() -> Path:
    return built(build_dir() / "funclatency")


@pytest.fixture(scope="session")
def target_app(worker_copy) -> Path:
    return worker_copy(built(build_dir() / "target-app"))


@pytest.fixture(scope="session")
def workload(worker_copy):
    """workload("threads") -> path of tests/programs/workload-threads."""
    return lambda name: worker_copy(built(build_dir() / "tests" / "programs" / f"workload-{name}"))


@pytest.fixture(scope="session")
def go_program(worker_copy):
    """go_program("go-workload") -> its path (target go-programs, which CMake
    skips when it finds no go: scripts/setup installs golang-go)."""
    return lambda name: worker_copy(built(build_dir() / "tests" / "programs" / name, "go-programs"))


@pytest.fixture(scope="session")
def go_workload(go_program) -> Path:
    """tests/programs/go-workload: the Go scenarios with their own truth."""
    return go_program("go-workload")


# --- Processes ----------------------------------------------------------------


class Process:
    """A child process whose stdout and stderr are read by threads, line by
    line, so a chatty child never blocks on a full pipe and tests can wait for
    a given line with a timeout."""

    def __init__(self, args, env=None, preexec_fn=None):
        self.args = [str(a) for a in args]
        self.popen = subprocess.Popen(
            self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
            preexec_fn=preexec_fn)
        self.pid = self.popen.pid
        self._lines = {"stdout": [], "stderr": []}
        self._new_line = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(name, stream), daemon=True)
            for name, stream in (("stdout", self.popen.stdout), ("stderr", self.popen.stderr))
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, name, stream):
        for line in stream:
            with self._new_line:
                self._lines[name].append(line.rstrip("\n"))
                self._new_line.notify_all()
        with self._new_line:
            self._new_line.notify_all()

    def lines(self, name):
        with self._new_line:
            return list(self._lines[name])

    def text(self, name):
        return "\n".join(self.lines(name))

    def wait_for_line(self, name, pattern, timeout):
        """Returns the first line of stream `name` matching regex `pattern`;
        fails the test if the process exits or `timeout` passes first."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._new_line:
            while True:
                for line in self._lines[name]:
                    if regex.search(line):
                        return line
                if self.popen.poll() is not None and not any(r.is_alive() for r in self._readers):
                    pytest.fail(f"{self.args[0]} exited with {self.popen.returncode} before "
                                f"printing /{pattern}/ on {name}\n{self.describe()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    pytest.fail(f"{self.args[0]} printed no /{pattern}/ on {name} within "
                                f"{timeout}s\n{self.describe()}")
                self._new_line.wait(min(remaining, 0.2))

    def wait(self, timeout):
        """Waits for exit; returns the exit code, or None on timeout."""
        try:
            code = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        for reader in self._readers:
            reader.join(timeout=5)
        return code

    def send(self, signum):
        if self.popen.poll() is None:
            self.popen.send_signal(signum)

    def stop(self, signum=signal.SIGINT, timeout=EXIT_TIMEOUT):
        """Sends `signum` and waits; fails the test if the process lingers."""
        self.send(signum)
        code = self.wait(timeout)
        if code is None:
            pytest.fail(f"{self.args[0]} did not exit within {timeout}s of signal {signum}\n"
                        f"{self.describe()}")
        return code

    def kill(self):
        if self.popen.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.wait(5)

    def describe(self):
        return (f"command: {' '.join(self.args)}\n--- stdout ---\n{self.text('stdout')[-4000:]}"
                f"\n--- stderr ---\n{self.text('stderr')[-4000:]}")


class Processes:
    """Starts processes for one test and kills whatever is left at teardown."""

    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self._started = []

    def spawn(self, args, **kwargs) -> Process:
        process = Process(args, **kwargs)
        self._started.append(process)
        return process

    def start_tool(self, tool: Path, args, **kwargs) -> Process:
        """Starts funclatency and waits until it says every probe is attached."""
        process = self.spawn([tool, *args], **kwargs)
        process.wait_for_line("stderr", r"^Tracing ", TOOL_ATTACH_TIMEOUT)
        return process

    def start_workload(self, program: Path, args=(), wait_signal=True) -> "Workload":
        truth_path = self.tmp_path / f"truth-{program.name}-{len(self._started)}.json"
        extra = ["--wait-signal"] if wait_signal else []
        process = self.spawn([program, *extra, "--truth", truth_path, *args])
        process.wait_for_line("stdout", r"^ready pid=\d+", READY_TIMEOUT)
        return Workload(process, truth_path)

    def kill_all(self):
        for process in reversed(self._started):
            process.kill()


class Workload:
    """A test program started with --wait-signal and --truth."""

    def __init__(self, process: Process, truth_path: Path):
        self.process = process
        self.truth_path = truth_path
        self.pid = process.pid

    def start(self):
        os.kill(self.pid, signal.SIGUSR1)

    def finish(self, timeout=120.0) -> dict:
        """Waits for a normal exit and returns the truth it wrote."""
        code = self.process.wait(timeout)
        if code is None:
            pytest.fail(f"workload did not finish within {timeout}s\n{self.process.describe()}")
        if code != 0:
            how = (f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}")
            hint = ""
            if "terminate called" in self.process.text("stderr"):
                hint = ("\n(a C++ exception could not unwind through a traced function: a "
                        "return probe replaces the return address with a trampoline that has "
                        "no unwind info)")
            pytest.fail(f"workload {how} while traced{hint}\n{self.process.describe()}")
        return Truth(json.loads(self.truth_path.read_text()))


@pytest.fixture
def procs(tmp_path):
    processes = Processes(tmp_path)
    yield processes
    processes.kill_all()


def run_tool(tool: Path, args, timeout=30.0, **kwargs) -> subprocess.CompletedProcess:
    """Runs funclatency to completion (for inputs it must refuse)."""
    return subprocess.run([str(tool), *map(str, args)], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, **kwargs)


def refusal_line(result: subprocess.CompletedProcess) -> str:
    """The one message line of a run the tool refused with exit code 2."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, f"exit {result.returncode}, stderr: {result.stderr!r}"
    assert len(lines) == 1, f"want one message line, got: {lines}"
    return lines[0]


def assert_refused(result: subprocess.CompletedProcess, *patterns):
    """Refused: exit code 2, one line on stderr matching every pattern, and
    nothing on stdout."""
    line = refusal_line(result)
    for pattern in patterns:
        assert re.search(pattern, line), f"/{pattern}/ not in: {line}"
    assert result.stdout.strip() == "", f"nothing should be reported: {result.stdout!r}"


# --- Ground truth and the tool's reports ---------------------------------------


def usec_row(low_us: int) -> int:
    """libbpf-tools' log2 slot of a row starting at `low_us`."""
    return 0 if low_us < 2 else low_us.bit_length() - 1


class Truth:
    """The JSON a workload writes: per function, calls and a log2 usec
    histogram, with the calls a tracer may legitimately see in a lower row."""

    def __init__(self, data: dict):
        self.data = data
        self.functions = {f["name"]: f for f in data["functions"]}

    def function(self, name) -> dict:
        return self.functions[name]

    def rows(self, name) -> dict:
        return {r["row"]: r["count"] for r in self.functions[name]["log2_usec"]}


def parse_json_records(text: str) -> list:
    records = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            records.append(json.loads(line))
    return records


def total_records(records) -> dict:
    """{symbol: record} of the "total" records among --json records."""
    totals = {}
    for record in records:
        if record.get("type") == "total":
            assert record["symbol"] not in totals, f"two total records for {record['symbol']}"
            totals[record["symbol"]] = record
    return totals


def totals_by_symbol(text: str) -> dict:
    """The "total" record per symbol from --json output."""
    return total_records(parse_json_records(text))


def rows_from_json(record: dict) -> dict:
    """{row: count} from a record's log2_buckets ([[low_ns, high_ns, count], ...])."""
    rows = {}
    for low_ns, high_ns, count in record["log2_buckets"]:
        assert low_ns % 1000 == 0 and (high_ns + 1) % 1000 == 0, f"not usec rows: {record}"
        rows[usec_row(low_ns // 1000)] = count
    return rows


CONSOLE_ROW = re.compile(r"^\s*(\d+)\s*->\s*(\d+)\s*:?\s+(\d+)\s*\|")


def rows_from_console(lines) -> dict:
    """{row: count} from log2 histogram lines (funclatency's or libbpf-tools')."""
    rows = {}
    for line in lines:
        match = CONSOLE_ROW.match(line)
        if match:
            low, count = int(match.group(1)), int(match.group(3))
            if count:
                rows[usec_row(low)] = count
    return rows


def truth_call_spans(truth_fn: dict) -> list:
    """[(lowest row, own row, calls)]: the rows a tracer may see each kind of
    call in (see rows_explained_by_truth)."""
    spans = []
    for r in truth_fn["log2_usec"]:
        row = r["row"]
        body_lower = sum(count for _, count in r.get("body_lower", []))
        spans.append((row, row, r["count"] - r["near_edge"] - r["disturbed"] - body_lower))
        spans.append((max(row - 1, 0), row, r["near_edge"]))
        spans.append((0, row, r["disturbed"]))
        spans.extend((lowest, row, count) for lowest, count in r.get("body_lower", []))
    return spans


def truth_rank_bounds_ns(truth_fn: dict, rank: int):
    """(lowest, highest) ns the tool may see for the rank-th shortest call
    (1-based). Every call looks no longer than the program measured it, so
    the tool's rank-th is at most the truth's, which lies in a known row and
    under the truth's max; every call looks no shorter than the lowest row
    its span allows, so the tool's rank-th is at least the rank-th of those
    rows' lower edges."""
    def row_low_ns(row):
        return 0 if row == 0 else (1 << row) * 1000

    def rank_th(pairs):  # [(value, calls)] -> value of the rank-th call
        seen = 0
        for value, calls in sorted(pairs):
            seen += calls
            if seen >= rank:
                return value
        raise AssertionError(f"rank {rank} beyond the truth's {seen} calls")

    spans = truth_call_spans(truth_fn)
    lowest = rank_th([(row_low_ns(low), calls) for low, _, calls in spans if calls])
    own_row = rank_th([(own, calls) for _, own, calls in spans if calls])
    highest = min(row_low_ns(own_row + 1) - 1, truth_fn["max_ns"])
    return lowest, highest


def assert_percentiles_match_truth(record: dict, truth_fn: dict, what: str):
    """p50/p95/p99 of a --json record lie where the truth allows that rank
    (truth_rank_bounds_ns), widened by the histogram's promised error: 1/32
    of the value, or half a microsecond below 32 us (latency_histogram.h)."""
    count = record["count"]
    for name, q in (("p50_ns", 0.50), ("p95_ns", 0.95), ("p99_ns", 0.99)):
        rank = max(1, math.ceil(q * count))
        lowest, highest = truth_rank_bounds_ns(truth_fn, rank)
        low = min(lowest * 31 / 32, lowest - 500)
        high = max(highest * 33 / 32, highest + 500)
        assert low <= record[name] <= high, (
            f"{what}: {name} {record[name]} ns is outside [{low:.0f}, {high:.0f}] ns, where "
            f"the truth puts call {rank} of {count} ([{lowest}, {highest}] ns before the "
            f"histogram's 1/32)\nrows: {truth_fn['log2_usec']}")


def rows_explained_by_truth(tool_rows: dict, truth_fn: dict):
    """None when the tool's rows equal the truth's, or differ only by calls
    the truth marks as movable: a call measured within the edge margin above
    its row's lower edge may appear one row lower (probes fire inside the
    measured interval), and a call whose thread was disturbed during the
    measurement may appear in any lower row. A call whose function timed its
    own body (body_lower) may appear in any row down to the body's: the
    probes fire between the body and the caller's clock reads. Else a
    description of the mismatch.

    Each call may go to an interval of rows [low, own row]; the tool's rows
    can be matched to the calls exactly when, for every contiguous range of
    rows, the calls confined to it fit in the tool's counts there (Hall's
    condition for interval bipartite graphs), with equal totals."""
    spans = truth_call_spans(truth_fn)
    truth_rows = {r["row"]: r["count"] for r in truth_fn["log2_usec"]}
    tool_rows = {row: count for row, count in tool_rows.items() if count}
    if tool_rows == truth_rows:
        return None
    by_row = {r["row"]: r for r in truth_fn["log2_usec"]}
    table = "row  truth  tool  near_edge  disturbed  body_lower\n" + "\n".join(
        f"{row:3}  {truth_rows.get(row, 0):5}  {tool_rows.get(row, 0):4}  "
        f"{by_row.get(row, {}).get('near_edge', 0):9}  {by_row.get(row, {}).get('disturbed', 0):9}  "
        f"{by_row.get(row, {}).get('body_lower', [])}"
        for row in sorted(set(truth_rows) | set(tool_rows)))
    if sum(tool_rows.values()) != sum(truth_rows.values()):
        return f"totals differ\n{table}"
    top = max(set(truth_rows) | set(tool_rows))
    for low in range(top + 1):
        for high in range(low, top + 1):
            confined = sum(c for lo, hi, c in spans if low <= lo and hi <= high)
            capacity = sum(tool_rows.get(r, 0) for r in range(low, high + 1))
            if confined > capacity:
                return (f"rows {low}..{high}: {confined} calls must be there, tool has "
                        f"{capacity}\n{table}")
    return None


def assert_rows_match_truth(tool_rows: dict, truth_fn: dict, what: str):
    mismatch = rows_explained_by_truth(tool_rows, truth_fn)
    assert mismatch is None, f"{what}: log2 rows differ from ground truth: {mismatch}"


# --- Breakpoints in a running process ---------------------------------------------


def _file_identity(binary: Path):
    """(real path, mtime, size): the key of what nm and readelf said about a file,
    which a rebuild or a copy under the same name changes."""
    real = os.path.realpath(binary)
    st = os.stat(real)
    return real, st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=None)
def _function_symbols(identity) -> dict:
    """{name: value} of the defined text symbols (nm), once per file: the
    breakpoint checks ask for the same few files' symbols hundreds of times
    (145 runs of nm took 32 CPU-s of a test run)."""
    out = subprocess.run(["nm", "--defined-only", identity[0]], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            symbols.setdefault(parts[2], int(parts[0], 16))
    return symbols


def _symbol_value(binary: Path, symbol: str) -> int:
    value = _function_symbols(_file_identity(binary)).get(symbol)
    if value is None:
        raise AssertionError(f"{symbol} not found in {binary}")
    return value


@functools.lru_cache(maxsize=None)
def _segments_of(identity):
    out = subprocess.run(["readelf", "-lW", identity[0]], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    segments = []
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segments.append((int(parts[2], 16), int(parts[1], 16), int(parts[4], 16)))
    return tuple(segments)


def _load_segments(binary: Path):
    """[(vaddr, file_offset, file_size)] of the PT_LOAD segments."""
    return _segments_of(_file_identity(binary))


def function_file_offset(binary: Path, symbol: str) -> int:
    value = _symbol_value(binary, symbol)
    for vaddr, offset, size in _load_segments(binary):
        if vaddr <= value < vaddr + size:
            return value - vaddr + offset
    raise AssertionError(f"{symbol} at {value:#x} is in no LOAD segment of {binary}")


def function_bytes_in_file(binary: Path, symbol: str, length=16) -> bytes:
    with open(binary, "rb") as f:
        f.seek(function_file_offset(binary, symbol))
        return f.read(length)


def function_bytes_in_process(pid: int, binary: Path, symbol: str, length=16) -> bytes:
    """The function's first bytes as process `pid` currently sees them."""
    file_offset = function_file_offset(binary, symbol)
    real = os.path.realpath(binary)
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) < 6 or parts[5] != real:
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        map_offset = int(parts[2], 16)
        if map_offset <= file_offset < map_offset + (end - start):
            with open(f"/proc/{pid}/mem", "rb") as mem:
                mem.seek(start + file_offset - map_offset)
                return mem.read(length)
    raise AssertionError(f"{symbol} of {real} is not mapped in process {pid}")


def assert_breakpoint_present(target: Workload, binary: Path, symbol: str):
    """While traced, the function's first bytes in the target differ from the file's."""
    assert function_bytes_in_process(target.pid, binary, symbol) != \
        function_bytes_in_file(binary, symbol), f"{symbol} is not patched in {target.pid}"


def assert_nothing_attached(target: Workload, binary: Path, *symbols: str):
    """No breakpoint left: each function's first bytes in the target equal the
    file's, and the target is still alive. Seen after the tool has exited, when
    the kernel removes its probes anyway: tests/bpf checks a detach while the
    tool is alive."""
    for symbol in symbols:
        assert function_bytes_in_process(target.pid, binary, symbol) == \
            function_bytes_in_file(binary, symbol), f"{symbol} still patched in {target.pid}"
    assert target.process.popen.poll() is None, "the target died"


def wait_until(predicate, timeout, interval=0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def trace_workload(procs: Processes, tool: Path, program: Path, symbols, mode: str,
                   workload_args=(), tool_args=()):
    """Runs `program` from start to exit under `funclatency --json --mode MODE
    -p PID program:SYMBOL...`; returns ({symbol: total record}, Truth). The
    tool must exit by itself when the process does."""
    work = procs.start_workload(program, workload_args)
    targets = [f"{program}:{symbol}" for symbol in symbols]
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-p", work.pid, *tool_args,
                                     *targets])
    work.start()
    truth = work.finish()
    code = traced.wait(EXIT_TIMEOUT)
    assert code is not None, (f"funclatency did not exit within {EXIT_TIMEOUT}s after the -p "
                              f"process exited\n{traced.describe()}")
    assert code == 0, f"funclatency exited with {code}\n{traced.describe()}"
    return totals_by_symbol(traced.text("stdout")), truth


def record_problems(record: dict, expected: dict) -> list:
    """How a --json total record differs from a function's ground truth: calls
    that returned, calls that never did (lost), and log2 rows (a mispaired call
    shows as one far too long or too short); [] when it does not."""
    problems = []
    if record["count"] != expected["returned"]:
        problems.append(f"calls that returned: tool {record['count']}, truth "
                        f"{expected['returned']}")
    if record["lost"] != expected["abandoned"]:
        problems.append(f"calls that never returned (lost): tool {record['lost']}, truth "
                        f"{expected['abandoned']}")
    mismatch = rows_explained_by_truth(rows_from_json(record), expected)
    if mismatch:
        problems.append(f"log2 rows differ from ground truth: {mismatch}")
    return problems


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Cgroups and private copies of target-app (--by, -c) -----------------------


def cgroup_v2_mount() -> Path:
    """Where the cgroup v2 hierarchy is mounted (/proc/mounts: not always
    /sys/fs/cgroup; a hybrid layout has it at /sys/fs/cgroup/unified)."""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] == "cgroup2":
            return Path(fields[1])
    pytest.skip("no cgroup v2 mount")


def _remove_cgroup(path: Path):
    """Moves the processes left in `path` back to the root, then removes it
    (a process that just exited may keep it busy for a moment)."""
    root = cgroup_v2_mount()

    def removed():
        if not path.exists():
            return True
        for pid in (path / "cgroup.procs").read_text().split():
            try:
                (root / "cgroup.procs").write_text(pid)
            except OSError:
                pass
        try:
            path.rmdir()
            return True
        except OSError:
            return False

    if not wait_until(removed, 5.0, interval=0.1):
        path.rmdir()  # raises: the error names what keeps it


@pytest.fixture
def cgroups():
    """make(name, *levels) -> a fresh cgroup v2 directory
    funclatency-test-NAME-XXXXXXXX under the mount, or with `levels` the
    directory those nested names make inside it (each level created); every
    directory made is removed after the test, deepest first, its processes
    moved back to the root cgroup first."""
    made = []

    def make(name, *levels):
        path = cgroup_v2_mount() / f"funclatency-test-{name}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        made.append(path)
        for level in levels:
            path = path / level
            path.mkdir()
            made.append(path)
        return path

    yield make
    for path in reversed(made):
        _remove_cgroup(path)


@pytest.fixture
def private_app(target_app, tmp_path):
    """A copy of target-app only this test runs: no other process calls it."""
    copy = tmp_path / "target-app"
    shutil.copy2(target_app, copy)
    return copy


def run_processes(procs, tool, app, placement, tool_args, mode, calls=150):
    """Starts a target-app per cgroup in `placement`, traces them system-wide
    with --json --mode MODE, lets them work; returns (records, {pid: truth of
    slow_op})."""
    works = []
    for cgroup in placement:
        work = procs.start_workload(app, ["--calls", str(calls), "--threads", "1"])
        (cgroup / "cgroup.procs").write_text(str(work.pid))
        works.append(work)
    traced = procs.start_tool(tool, ["--json", "--mode", mode, "-i", "0.5", *tool_args,
                                     f"{app}:slow_op"])
    for work in works:
        work.start()
    truths = {work.pid: work.finish().function("slow_op") for work in works}
    traced.stop()
    records = parse_json_records(traced.text("stdout"))
    return records, truths


def totals(records) -> list:
    """The "total" records among --json records (one per function and series)."""
    return [r for r in records if r["type"] == "total"]


def thread_named(pid, name):
    """The tid of process `pid`'s thread named `name` (its comm), or None."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                if comm.read().strip() == name:
                    return int(tid)
        except (FileNotFoundError, ProcessLookupError):  # that thread has just ended
            continue
    return None

#!/usr/bin/env python3
# Writes the --slowest seeds of the exposition fuzzer's corpus (slowest_*):
# its input is read by FuzzedDataProvider in exposition_fuzz.cpp's order, so
# seeds that reach the exemplars (bucket edges, long and invalid UTF-8 frames,
# merged series) are easier encoded than found. Strings come from the front
# of the input, integers from the back (the last byte is read first, most
# significant first). Keep in step with snapshot_from and slow_call_from.
# Usage: make_slowest_seeds.py tests/fuzz/exposition/corpus
import struct, sys, os
ROWS = 48

class Enc:
    def __init__(self): self.front = bytearray(); self.back = bytearray()
    def s(self, text, max_len):
        b = text if isinstance(text, bytes) else text.encode()
        assert len(b) <= max_len
        out = bytearray()
        for c in b:
            out.append(c)
            if c == 0x5c: out.append(0x5c)
        if len(b) < max_len: out += b'\\ '
        self.front += out
    def n(self, value, nbytes):  # raw big-endian integer of nbytes
        self.back += (value % (1 << (8 * nbytes))).to_bytes(nbytes, 'big')
    def u64(self, v): self.n(v, 8)
    def i64(self, v): self.n(v & (2**64 - 1), 8)
    def u32(self, v): self.n(v, 4)
    def i32(self, v): self.n(v & (2**32 - 1), 4)  # full range int: min + raw, min = -2^31
    def boolean(self, v): self.n(1 if v else 0, 1)
    def data(self): return bytes(self.front) + bytes(reversed(self.back))

def full_int(e, v):   # ConsumeIntegral<int>: result = INT_MIN + raw
    e.n((v + 2**31) & (2**32 - 1), 4)
def full_i64(e, v):
    e.n((v + 2**63) & (2**64 - 1), 8)

def long_string(e, piece, max_len, copies=1):
    e.s(piece, max_len)
    e.boolean(copies > 1)
    if copies > 1: e.n(copies - 1, 1)  # InRange<int>(1, 40)

def duration(e, d):
    if d[0] == 'any':
        e.boolean(True); e.u64(d[1])
    else:  # ('edge', row, delta)
        e.boolean(False); e.n(d[1], 1); e.n(d[2] + 1, 1)

def function(e, symbol, binary, pid=0, unit=1, counts=None, series=None, other=False, by_pid=False):
    e.s(symbol, 40); e.s(binary, 40); full_int(e, pid); e.n(unit, 1)
    counts = counts or {}
    for r in range(ROWS): e.n(counts.get(r, 0), 3)
    e.u64(sum(counts.values()) * 3000); e.u32(0); e.u32(0)
    series = series or {}
    for key in ('comm', 'cgroup', 'container_id', 'pod_uid'):
        e.boolean(key in series)
        if key in series: e.s(series[key], 40)
    e.boolean(by_pid); e.boolean(other)

def call(e, dur, pid, tid, thread, time_ns, frames):
    duration(e, dur); full_int(e, pid); full_int(e, tid)
    long_string(e, *thread) if isinstance(thread, tuple) else long_string(e, thread, 32)
    full_i64(e, time_ns); e.n(len(frames), 1)
    for f in frames:  # (address, symbol or None for the function's own, offset, binary)
        e.u64(f[0])
        e.boolean(f[1] is None)
        if f[1] is not None:
            long_string(e, *f[1]) if isinstance(f[1], tuple) else long_string(e, f[1], 64)
        e.u64(f[2])
        long_string(e, f[3], 32)

def seed(name, header, functions, calls_per_function, ringbuf=0):
    e = Enc()
    e.s(header[0], 64); e.s(header[1], 16)
    e.u64(ringbuf); e.n(len(functions), 1)
    for f in functions: function(e, **f)
    for cs in calls_per_function:
        e.n(len(cs), 1)
        for c in cs: call(e, *c)
    data = e.data()
    assert len(data) <= 2048, (name, len(data))
    open(os.path.join(sys.argv[1], name), 'wb').write(data)

OM = ('application/openmetrics-text; version=1.0.0', 'ebpf')
T = 1796087307718123456  # ns since the epoch
counts = {2: 100, 3: 50, 12: 3}

# Calls at, below and above bucket edges, a frame of the function itself skipped.
seed('slowest_bucket_edges', OM,
     [dict(symbol='handle_request', binary='/usr/bin/server', pid=30008, unit=1, counts=counts)],
     [[(('edge', 3, 0), 30008, 30008, 'server', T,
        [(0x401000, None, 0x10, '/usr/bin/server'), (0x401100, 'slow_path_inner', 0x3d, '/usr/bin/server')]),
       (('edge', 3, 1), 30008, 30009, 'worker-1', T + 1000000,
        [(0x401100, 'slow_path_inner', 0x3d, '/usr/bin/server')]),
       (('edge', 2, -1), 30008, 30010, 'worker-2', T + 2000000, []),
       (('any', 9000), 30008, 30012, 'worker-4', T + 4000000,
        [(0x401100, 'fast_path', 0x12, '/usr/bin/server')]),
       (('any', 5000000000000), 30008, 30011, 'worker-3', T + 3000000,
        [(0x7f0000001000, '', 0, '/lib/x86_64-linux-gnu/libc.so.6'), (0x401200, 'main', 0x2f, '/usr/bin/server')])]])

# A C++ symbol far over 128 code points, and a multi-byte one cut at a code point.
cxx = '(anonymous namespace)::run_worker(unsigned long, double, unsigned long, double, (anonymous namespace)::Truths)'
seed('slowest_long_frames', OM,
     [dict(symbol='slow_op', binary='/work/main/build/target-app', pid=2147483647, unit=1, counts=counts)],
     [[(('any', 6190000), 2147483647, -2147483648, ('target-app-thread-name-', 32, 40), T,
        [(0x560d82ec4ef6, (cxx[:64], 64, 3), 0x4b6, '/work/main/build/target-app')]),
       (('any', 12000), 1, 2, ('t', 32), T,
        [(0x560d82ec4ef6, ('\u51fd\u6570\u540d'.encode(), 64, 40), 0xffffffffffffffff, '/x')])]])

# Invalid UTF-8 everywhere: symbols, thread names, binaries; quotes, backslashes, newlines.
seed('slowest_invalid_utf8', OM,
     [dict(symbol=b'\xff\xfesym', binary=b'/bin/\xc0\xaf', pid=-1, unit=1, counts=counts,
           series=dict(comm=b'a"b\\c\nd'))],
     [[(('edge', 47, 1), -5, 0, (b'\xed\xa0\x80th\xf4\x90\x80\x80', 32, 1), -1,
        [(0, (b'\xe2\x80', 64, 40), 1, b'\xff'), (1, 'not-reached', 2, '')]),
       (('any', 0), 0, 0, '', 0, [(2, b'q"u\\o\nte\xf0\x9f\x98', 0, '')]),
       (('edge', 1, 0), 3, 4, b'\x00\x01\x7f', 2**62, [(3, (b'\xe4\xb8\xad\xe2', 64, 40), 0, '')])]])

# Two series the labels cannot tell apart (merged by snapshot_of), in ns and
# ms, --by labels; calls in +Inf and in the first bucket.
byl = dict(comm='app', cgroup='/system.slice/app.service')
seed('slowest_merged_series', ('application/openmetrics-text', ''),
     [dict(symbol='f', binary='/b/app', pid=7, unit=0, counts={0: 1, 5: 2}, series=byl, by_pid=True),
      dict(symbol='f', binary='/b/app', pid=7, unit=2, counts={1: 4}, series=byl, by_pid=True),
      dict(symbol='g', binary='/b/app', pid=0, unit=1, other=True)],
     [[(('any', 2**64 - 1), 7, 8, 'a', T, [(1, 'caller', 1, '/b/app')]),
       (('any', 1), 7, 9, 'b', T, [(1, 'caller2', 1, '/b/app')])],
      [(('edge', 1, 0), 7, 10, 'c', T, [(1, None, 0, ''), (2, 'f', 0, ''), (3, 'outer', 0x10, '/b/app')]),
       (('edge', 1, 0), 7, 11, 'd', T, [(1, 'same-duration', 0, '')])],
      [(('edge', 20, -1), 1, 1, 'e', T, [])]])

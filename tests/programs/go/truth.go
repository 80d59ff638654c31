// Ground truth, as the C++ workloads record it (examples/target-app/
// workload_support.h): per function, calls that returned or were abandoned, and
// the log2 usec histogram of the durations the caller measured around each call.
// Every traced function here times its own body, so each call also says how low
// a tracer may see it: no lower than its body's row (the probes fire around the
// body, inside the caller's measurement).
package main

import (
	"encoding/json"
	"math/bits"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Rows as libbpf-tools prints a usec histogram: row 0 holds 0 and 1 us, row r
// holds [2^r, 2^(r+1) - 1] us of floor(duration_ns / 1000).
const log2Rows = 48

func usecRow(durationNs int64) int {
	usec := uint64(durationNs) / 1000
	if usec < 2 {
		return 0
	}
	row := bits.Len64(usec) - 1
	if row >= log2Rows {
		row = log2Rows - 1
	}
	return row
}

// body is what a traced function measures of itself: begin() first in its
// body, end() last on the path that returns (never on a path that panics out).
type body struct {
	start    time.Time
	ns       int64
	tidStart int
	tidEnd   int
	ended    bool
	// Set by a traced function that checks: the runtime copied the stack
	// while its body ran (its own frame moved between begin and end).
	movedInBody bool
}

func (b *body) begin() {
	b.tidStart = syscall.Gettid()
	b.start = time.Now()
}

// frameAt is where a local variable is: it changes when the runtime copies
// the goroutine's stack.
func frameAt(local *byte) uintptr {
	return uintptr(unsafe.Pointer(local))
}

func (b *body) end() {
	b.ns = time.Since(b.start).Nanoseconds()
	b.tidEnd = syscall.Gettid()
	b.ended = true
}

type functionTruth struct {
	mu        sync.Mutex
	name      string
	returned  uint64
	abandoned uint64
	sumNs     int64
	// The sum of the calls' bodies (each capped at its call): a tracer's sum
	// is no less. Every returned call timed its body.
	bodySumNs int64
	minNs     int64
	maxNs     int64
	rows      [log2Rows]uint64
	// [row][lowest row]: calls whose body alone fell in a lower row.
	bodyLower [log2Rows][log2Rows]uint64
	// Calls whose body began on one thread and ended on another.
	migrated uint64
	// Calls during which the runtime copied the goroutine's stack (the
	// caller's own frame moved), and those where it did so while the body ran.
	stackMoved       uint64
	stackMovedInBody uint64
}

// The functions reported, in the order first asked for; scenarios that call
// the same function add to one truth.
var functionTruths []*functionTruth

func truthOf(name string) *functionTruth {
	for _, t := range functionTruths {
		if t.name == name {
			return t
		}
	}
	t := &functionTruth{name: name, minNs: -1}
	functionTruths = append(functionTruths, t)
	return t
}

// call runs `traced` (which calls one traced function, passing it the body to
// time) and records the call as a tracer times it. If the traced function
// panics, nothing is recorded here: the caller that recovers records the call
// as abandoned.
//
//go:noinline
func (t *functionTruth) call(traced func(b *body)) {
	var anchor byte
	frameBefore := frameAt(&anchor)
	b := &body{}
	start := time.Now()
	traced(b)
	durationNs := time.Since(start).Nanoseconds()
	moved := frameAt(&anchor) != frameBefore
	t.recordReturn(durationNs, b, moved)
}

// callAbandoning is call() for a function that may panic: a panic is
// recovered here, in an untraced caller, and the call counted as abandoned.
// Returns whether it panicked.
//
//go:noinline
func (t *functionTruth) callAbandoning(traced func(b *body)) (panicked bool) {
	defer func() {
		if recover() != nil {
			t.recordAbandoned()
			panicked = true
		}
	}()
	t.call(traced)
	return false
}

func (t *functionTruth) recordReturn(durationNs int64, b *body, stackMoved bool) {
	if !b.ended {
		fail("%s returned without timing its body", t.name)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.returned++
	t.sumNs += durationNs
	if t.minNs < 0 || durationNs < t.minNs {
		t.minNs = durationNs
	}
	if durationNs > t.maxNs {
		t.maxNs = durationNs
	}
	row := usecRow(durationNs)
	t.rows[row]++
	bodyNs := b.ns
	if bodyNs > durationNs {
		bodyNs = durationNs
	}
	t.bodySumNs += bodyNs
	if bodyRow := usecRow(bodyNs); bodyRow < row {
		t.bodyLower[row][bodyRow]++
	}
	if b.tidStart != b.tidEnd {
		t.migrated++
	}
	if stackMoved {
		t.stackMoved++
	}
	if b.movedInBody {
		t.stackMovedInBody++
	}
}

func (t *functionTruth) recordAbandoned() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandoned++
}

type rowJSON struct {
	Row       int         `json:"row"`
	LowUs     uint64      `json:"low_us"`
	HighUs    uint64      `json:"high_us"`
	Count     uint64      `json:"count"`
	NearEdge  uint64      `json:"near_edge"`
	Disturbed uint64      `json:"disturbed"`
	BodyLower [][2]uint64 `json:"body_lower"`
}

type functionJSON struct {
	Name      string `json:"name"`
	Calls     uint64 `json:"calls"`
	Returned  uint64 `json:"returned"`
	Abandoned uint64 `json:"abandoned"`
	SumNs     int64  `json:"sum_ns"`
	// Calls that timed their body (all that returned), and the bodies' sum.
	TimedBodies uint64 `json:"timed_bodies"`
	BodySumNs   int64  `json:"body_sum_ns"`
	MinNs       int64  `json:"min_ns"`
	MaxNs       int64  `json:"max_ns"`
	Migrated    uint64 `json:"migrated"`
	StackMoved  uint64 `json:"stack_moved"`
	// Of those, the calls whose stack was copied while their body ran.
	StackMovedInBody uint64    `json:"stack_moved_in_body"`
	Log2Usec         []rowJSON `json:"log2_usec"`
}

func (t *functionTruth) toJSON() functionJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := functionJSON{Name: t.name, Calls: t.returned + t.abandoned, Returned: t.returned,
		Abandoned: t.abandoned, SumNs: t.sumNs, TimedBodies: t.returned, BodySumNs: t.bodySumNs,
		MinNs: t.minNs, MaxNs: t.maxNs,
		Migrated: t.migrated, StackMoved: t.stackMoved, StackMovedInBody: t.stackMovedInBody,
		Log2Usec: []rowJSON{}}
	if t.returned == 0 {
		out.MinNs = 0
	}
	for row := 0; row < log2Rows; row++ {
		if t.rows[row] == 0 {
			continue
		}
		r := rowJSON{Row: row, HighUs: (2 << row) - 1, Count: t.rows[row], BodyLower: [][2]uint64{}}
		if row > 0 {
			r.LowUs = 1 << row
		}
		for lowest := 0; lowest < row; lowest++ {
			if calls := t.bodyLower[row][lowest]; calls != 0 {
				r.BodyLower = append(r.BodyLower, [2]uint64{uint64(lowest), calls})
			}
		}
		out.Log2Usec = append(out.Log2Usec, r)
	}
	return out
}

type truthReport struct {
	Program   string         `json:"program"`
	Pid       int            `json:"pid"`
	Scenarios []string       `json:"scenarios"`
	Functions []functionJSON `json:"functions"`
	Spans     []spanJSON     `json:"spans,omitempty"`
}

// writeTruth writes the report to path.
func writeTruth(path string, scenarios []string) error {
	report := truthReport{Program: "go-workload", Pid: os.Getpid(), Scenarios: scenarios,
		Functions: []functionJSON{}}
	for _, t := range functionTruths {
		report.Functions = append(report.Functions, t.toJSON())
	}
	if len(spanTruths) > 0 {
		report.Spans = spansJSON()
	}
	return writeJSON(path, report)
}

// writeJSON writes value as JSON to path, through a rename so that a reader
// never sees half a file.
func writeJSON(path string, value any) error {
	data, err := json.MarshalIndent(value, "", " ")
	if err != nil {
		return err
	}
	partial := path + ".partial"
	if err := os.WriteFile(partial, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(partial, path)
}

// go-workload: the Go program the Go end-to-end tests (tests/e2e/test_go.py)
// trace. It speaks the workload protocol of tests/programs/workloads: prints
// "ready pid=N", with --wait-signal starts only on SIGUSR1, stops early on
// SIGINT/SIGTERM, and writes its ground truth to --truth (truth.go).
//
// Scenarios (--scenario, default all of them in turn):
//
//	sleepy   --goroutines goroutines (default 50, more than the --procs 2
//	         threads that run Go code) each make --calls calls (default 8) of
//	         main.sleepy, which sleeps 3 ms: the goroutines park inside the call
//	         and resume on other threads (truth: "migrated").
//	grow     --calls times (default 40), each on a fresh goroutine (a small
//	         stack): main.grow, whose body recurses through 64 untraced 1 KiB
//	         frames, so the runtime copies the stack while the call is in flight;
//	         and main.bigframe, whose own 16 KiB frame makes its entry call
//	         morestack (the prologue then starts the function again). Truth
//	         "stack_moved" counts the calls during which the stack was copied,
//	         "stack_moved_in_body" those where that happened in the body
//	         (grow: all; bigframe: none, its copy comes before its body).
//	recurse  --calls outer calls (default 20) of main.recurse, which recurses to
//	         depth 5 (5 calls each), sleeping 1, 1, 2, 4, 8 ms of its own at
//	         depths 1..5: inclusive durations of about 1, 2, 4, 8, 16 ms.
//	panic    on one goroutine, --calls rounds (default 50), each: in the first
//	         --abandon rounds (default 20) a call of main.panicky that panics
//	         (in panicky itself or in an untraced function it calls) and is
//	         recovered by an untraced caller, so the call never returns (truth:
//	         "abandoned"); then a call of main.recovers, which panics and
//	         recovers in its own deferred function, so it returns normally,
//	         called from frames shallower than panicky's: the goroutine is seen
//	         again at a shallower depth, in another traced function; then a call of
//	         main.panicky that returns, from the same call site as the
//	         abandoned one.
//	panic-same-site
//	         the same without main.recovers: each abandoned main.panicky call is
//	         followed by one from the same call site (same goroutine, same
//	         depth) that returns, as a server's next request after a handler's
//	         recovered panic; the entry of a morestack restart looks the same.
//	outcomes on one goroutine, --calls rounds (default 200), each a call of
//	         main.fetch, which returns a non-nil error when i % 4 == 3 (sleeping
//	         600 us, else 200 us), and one of main.parse, which returns (int,
//	         error) with the error non-nil when i % 3 == 0 (300 us, else 100 us).
//	         Truth by outcome: "main.fetch:ok", "main.fetch:error", and the same
//	         for main.parse (--by retval:go-error, go-error:1). Run only when
//	         asked for.
//	self     --goroutines goroutines (here default 6) each make --calls rounds
//	         (default 10) of traced calls that call traced calls, one of them
//	         abandoned by a panic (self_time.go). Run only when asked for.
//	panic-goroutines
//	         --calls rounds (default 8), 500 ms apart, each on a fresh goroutine:
//	         a call of main.panicky that returns, then one that panics and is
//	         recovered by an untraced caller, after which the goroutine ends
//	         while the process runs on. With --procs 1 the next round's
//	         goroutine reuses the ended one's g (a new goid in it): a tracer
//	         sees that one ended. Run only when asked for.
//	panic-last
//	         on one goroutine, --calls calls (default 500) of main.panicky, every
//	         one of them panicking and recovered by an untraced caller, the last
//	         one too; then the program exits. No later call shows the last one
//	         abandoned: a tracer must count it lost when the goroutine (here the
//	         process) is gone. Run only when asked for (not part of "all").
//	spans    --goroutines goroutines (default 40) each make --calls rounds
//	         (default 10) of two spans, one per goroutine across a sleep, one
//	         by a job id across goroutines (spans.go; truth "spans"). Run
//	         only when asked for.
//
// Every traced function is //go:noinline and times its own body.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var stopRequested atomic.Bool

func keepGoing() bool { return !stopRequested.Load() }

// fail reports a run that went against its plan (exit 1).
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-workload: "+format+"\n", args...)
	os.Exit(1)
}

// badUsage reports options that make no sense (exit 2, as the flag package does).
func badUsage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "go-workload: "+format+"\n", args...)
	os.Exit(2)
}

// --- sleepy: more goroutines than threads, parked inside the traced call -----

const sleepyDuration = 3 * time.Millisecond

//go:noinline
func sleepy(d time.Duration, b *body) int {
	b.begin()
	time.Sleep(d)
	b.end()
	return 1
}

func runSleepy(goroutines, calls int) {
	truth := truthOf("main.sleepy")
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(goroutines)
	done.Add(goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for i := 0; i < calls && keepGoing(); i++ {
				truth.call(func(b *body) { sleepy(sleepyDuration, b) })
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// --- grow: the stack is copied during the call, and at its entry -------------

const (
	growDepth      = 64
	growFrameBytes = 1024
	bigFrameBytes  = 16 << 10
	growSleep      = 500 * time.Microsecond
)

// touch keeps a local array real (on the stack, written and read).
//
//go:noinline
func touch(buf []byte, value int) int {
	buf[value%len(buf)] = byte(value)
	return int(buf[(value*7)%len(buf)])
}

// deepUntraced needs about depth KiB of stack.
//
//go:noinline
func deepUntraced(depth int) int {
	var frame [growFrameBytes]byte
	sum := touch(frame[:], depth)
	if depth > 0 {
		sum += deepUntraced(depth - 1)
	}
	return sum + int(frame[depth%len(frame)])
}

//go:noinline
func grow(depth int, b *body) int {
	var anchor byte
	b.begin()
	frame := frameAt(&anchor)
	levels := deepUntraced(depth)
	time.Sleep(growSleep)
	b.movedInBody = frameAt(&anchor) != frame
	b.end()
	return levels
}

//go:noinline
func bigframe(value int, b *body) int {
	var frame [bigFrameBytes]byte
	b.begin()
	where := frameAt(&frame[0])
	sum := touch(frame[:], value)
	time.Sleep(growSleep)
	b.movedInBody = frameAt(&frame[0]) != where
	b.end()
	return sum + int(frame[value%len(frame)])
}

func runGrow(calls int) {
	growTruth := truthOf("main.grow")
	bigTruth := truthOf("main.bigframe")
	for i := 0; i < calls && keepGoing(); i++ {
		// A new goroutine's stack is the smallest there is (2 KiB).
		done := make(chan struct{})
		go func() {
			defer close(done)
			growTruth.call(func(b *body) { grow(growDepth, b) })
		}()
		<-done
		done = make(chan struct{})
		go func(value int) {
			defer close(done)
			bigTruth.call(func(b *body) { bigframe(value, b) })
		}(i)
		<-done
	}
}

// --- recurse: the traced function calls itself ------------------------------

const recurseDepth = 5

// Own sleep of each level, by depth (1 = innermost).
var recurseOwnSleep = [recurseDepth + 1]time.Duration{0, time.Millisecond, time.Millisecond,
	2 * time.Millisecond, 4 * time.Millisecond, 8 * time.Millisecond}

//go:noinline
func recurse(depth int, truth *functionTruth, b *body) int {
	b.begin()
	time.Sleep(recurseOwnSleep[depth])
	levels := 1
	if depth > 1 {
		truth.call(func(inner *body) { levels += recurse(depth-1, truth, inner) })
	}
	b.end()
	return levels
}

func runRecurse(calls int) {
	truth := truthOf("main.recurse")
	for i := 0; i < calls && keepGoing(); i++ {
		levels := 0
		truth.call(func(b *body) { levels = recurse(recurseDepth, truth, b) })
		if levels != recurseDepth {
			fail("recurse returned %d levels, not %d", levels, recurseDepth)
		}
	}
}

// --- panic: calls a panic abandons, and a panic recovered inside the call ----

const (
	panicSleep  = 400 * time.Microsecond
	panicRounds = 50  // default --calls
	lastRounds  = 500 // panic-last's default --calls
	// panic-goroutines: default --calls, and the pause between rounds.
	goroutineRounds = 8
	goroutinePause  = 500 * time.Millisecond
)

type panicWhere int

const (
	noPanic panicWhere = iota
	panicInFunction
	panicInCallee
)

//go:noinline
func panicNow(tag int) {
	panic(fmt.Sprintf("go-workload: panic %d on purpose", tag))
}

//go:noinline
func panicky(tag int, where panicWhere, b *body) int {
	b.begin()
	time.Sleep(panicSleep)
	switch where {
	case panicInFunction:
		panic(fmt.Sprintf("go-workload: panicky %d panics on purpose", tag))
	case panicInCallee:
		panicNow(tag)
	}
	b.end()
	return tag + 1
}

//go:noinline
func recovers(tag int, b *body) (result int) {
	b.begin()
	defer func() {
		if recover() != nil {
			result = tag + 1
		}
		b.end()
	}()
	time.Sleep(panicSleep)
	panicNow(tag)
	return tag
}

// callPanicky calls main.panicky from one call site whether it panics or
// not; reports a panic that went against `where`.
func callPanicky(truth *functionTruth, tag int, where panicWhere) {
	if truth.callAbandoning(func(b *body) { panicky(tag, where, b) }) != (where != noPanic) {
		fail("panicky(%d, %d): panicked or not against the plan", tag, where)
	}
}

func runPanic(abandon, calls int, sameSite bool) {
	panickyTruth := truthOf("main.panicky")
	var recoversTruth *functionTruth
	if !sameSite {
		recoversTruth = truthOf("main.recovers")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < calls && keepGoing(); i++ {
			if i < abandon {
				callPanicky(panickyTruth, i, panicInFunction+panicWhere(i%2))
			}
			if !sameSite {
				result := 0
				recoversTruth.call(func(b *body) { result = recovers(i, b) })
				if result != i+1 {
					fail("recovers(%d) returned %d, not %d (its panic was not recovered)", i, result,
						i+1)
				}
			}
			callPanicky(panickyTruth, i, noPanic)
		}
	}()
	<-done
}

// runPanicLast: every call of main.panicky panics, the last one too, and
// nothing follows it on that goroutine.
func runPanicLast(calls int) {
	panickyTruth := truthOf("main.panicky")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < calls && keepGoing(); i++ {
			callPanicky(panickyTruth, i, panicInFunction+panicWhere(i%2))
		}
	}()
	<-done
}

// runPanicGoroutines: goroutines that end with a call of main.panicky
// abandoned, one after another, in a process that runs on.
func runPanicGoroutines(calls int) {
	panickyTruth := truthOf("main.panicky")
	for i := 0; i < calls && keepGoing(); i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			callPanicky(panickyTruth, i, noPanic)
			callPanicky(panickyTruth, i, panicInFunction)
		}()
		<-done
		time.Sleep(goroutinePause)
	}
}

// --- outcomes: an error result, nil or not, on a schedule ---------------------

var errFetch = errors.New("fetch failed")

// sleepFor sleeps `failing` for a call that fails, else `succeeding`.
func sleepFor(fails bool, failing, succeeding time.Duration) {
	if fails {
		time.Sleep(failing)
	} else {
		time.Sleep(succeeding)
	}
}

//go:noinline
func fetch(i int, b *body) error {
	b.begin()
	fails := i%4 == 3
	sleepFor(fails, 600*time.Microsecond, 200*time.Microsecond)
	b.end()
	if fails {
		return errFetch
	}
	return nil
}

//go:noinline
func parse(i int, b *body) (int, error) {
	b.begin()
	fails := i%3 == 0
	sleepFor(fails, 300*time.Microsecond, 100*time.Microsecond)
	b.end()
	if fails {
		return 0, fmt.Errorf("parse %d: %w", i, errFetch)
	}
	return i * 2, nil
}

func runOutcomes(calls int) {
	outcome := func(name string, fails bool) *functionTruth {
		if fails {
			return truthOf(name + ":error")
		}
		return truthOf(name + ":ok")
	}
	for i := 0; i < calls && keepGoing(); i++ {
		var err error
		outcome("main.fetch", i%4 == 3).call(func(b *body) { err = fetch(i, b) })
		if (err != nil) != (i%4 == 3) {
			fail("fetch(%d) returned %v against its schedule", i, err)
		}
		outcome("main.parse", i%3 == 0).call(func(b *body) { _, err = parse(i, b) })
		if (err != nil) != (i%3 == 0) {
			fail("parse(%d) returned %v against its schedule", i, err)
		}
	}
}

// --- main ------------------------------------------------------------------

var allScenarios = []string{"sleepy", "grow", "recurse", "panic", "panic-same-site"}

// Scenarios run only when named: "all" keeps what the other tests expect of it.
var extraScenarios = []string{"panic-last", "panic-goroutines", "outcomes", "self", "spans"}

type options struct {
	scenario   string
	calls      int
	goroutines int
	abandon    int
	procs      int
	truthPath  string
	waitSignal bool
}

func parseOptions() options {
	var o options
	flag.StringVar(&o.scenario, "scenario", "all",
		"what to run: "+strings.Join(append(allScenarios, extraScenarios...), ", ")+", or all (each in turn, with its defaults)")
	flag.IntVar(&o.calls, "calls", -1, "calls to make (per scenario, see the source; -1: its default)")
	flag.IntVar(&o.goroutines, "goroutines", 0,
		"sleepy, self, spans: goroutines making calls (0: the scenario's default, 50, 6 and 40)")
	flag.IntVar(&o.abandon, "abandon", 20, "panic, panic-same-site: calls a panic abandons")
	flag.IntVar(&o.procs, "procs", 2, "GOMAXPROCS: threads running Go code at once")
	flag.StringVar(&o.truthPath, "truth", "",
		"at exit, write calls and the measured log2 usec histogram per function as JSON")
	flag.BoolVar(&o.waitSignal, "wait-signal", false,
		"print 'ready pid=N', then start only when SIGUSR1 arrives")
	flag.Parse()
	if flag.NArg() != 0 {
		badUsage("unexpected argument %q", flag.Arg(0))
	}
	if o.goroutines < 0 || o.procs < 1 || o.abandon < 0 || o.calls < -1 {
		badUsage("--procs must be positive, --goroutines, --abandon and --calls not negative")
	}
	known := o.scenario == "all"
	for _, scenario := range append(allScenarios, extraScenarios...) {
		known = known || o.scenario == scenario
	}
	if !known {
		badUsage("unknown --scenario %q (%s, or all)", o.scenario,
			strings.Join(append(allScenarios, extraScenarios...), ", "))
	}
	panics := o.scenario == "all" || (o.scenario == "panic" || o.scenario == "panic-same-site")
	if panics && o.abandon > callsOr(o, panicRounds) {
		// A call follows each abandoned one: a tracer sees that a call was
		// abandoned only when the goroutine makes another traced call.
		badUsage("--abandon must not exceed --calls (the rounds of the panic scenarios)")
	}
	return o
}

func callsOr(o options, fallback int) int {
	if o.calls >= 0 {
		return o.calls
	}
	return fallback
}

func goroutinesOr(o options, fallback int) int {
	if o.goroutines > 0 {
		return o.goroutines
	}
	return fallback
}

func run(o options, scenario string) {
	switch scenario {
	case "sleepy":
		runSleepy(goroutinesOr(o, 50), callsOr(o, 8))
	case "grow":
		runGrow(callsOr(o, 40))
	case "recurse":
		runRecurse(callsOr(o, 20))
	case "panic", "panic-same-site":
		runPanic(o.abandon, callsOr(o, panicRounds), scenario == "panic-same-site")
	case "outcomes":
		runOutcomes(callsOr(o, 200))
	case "panic-last":
		runPanicLast(callsOr(o, lastRounds))
	case "panic-goroutines":
		runPanicGoroutines(callsOr(o, goroutineRounds))
	case "self":
		runSelf(goroutinesOr(o, 6), callsOr(o, 10))
	case "spans":
		runSpans(goroutinesOr(o, 40), callsOr(o, 10))
	}
}

// waitForStart announces readiness and, with --wait-signal, waits for SIGUSR1
// (or SIGINT/SIGTERM: stop before any work). SIGINT/SIGTERM later stop the
// calls early; the truth is still written.
func waitForStart(waitSignal bool) {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGINT, syscall.SIGTERM)
	fmt.Printf("ready pid=%d\n", os.Getpid())
	if waitSignal {
		if <-signals != syscall.SIGUSR1 {
			stopRequested.Store(true)
		}
	}
	go func() {
		for s := range signals {
			if s != syscall.SIGUSR1 {
				stopRequested.Store(true)
			}
		}
	}()
}

func main() {
	o := parseOptions()
	scenarios := allScenarios
	if o.scenario != "all" {
		scenarios = []string{o.scenario}
	}
	runtime.GOMAXPROCS(o.procs)
	waitForStart(o.waitSignal)
	for _, scenario := range scenarios {
		run(o, scenario)
	}
	if o.truthPath != "" {
		if err := writeTruth(o.truthPath, scenarios); err != nil {
			fail("cannot write %s: %v", o.truthPath, err)
		}
		if o.scenario == "self" {
			if err := writeSelfBounds(o.truthPath + ".self"); err != nil {
				fail("cannot write %s.self: %v", o.truthPath, err)
			}
		}
	}
}

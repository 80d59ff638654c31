// The self scenario: Go functions that call traced Go functions, for --self
// (each call's time less its traced children's), with the goroutines parking
// inside the calls so that they resume on other threads: a shadow stack kept
// per thread would hand a child's time to another goroutine's frame.
//
// Per round, on each of --goroutines goroutines (default 6, more than the 2
// threads that run Go code):
//
//	main.selfParent: 300 us, main.selfLeafA (500 us), main.selfLeafB (1 ms),
//	  main.selfPanicky (200 us, then a panic that an untraced function inside
//	  selfParent recovers: abandoned, its time stays selfParent's own), 300 us
//	main.selfRecurse(3): 300 us a level, then the level below
//
// Besides the usual truth, TRUTH.self holds per function the bounds of each
// call, as tests/programs/workloads/self_time.cpp writes them: [inclusive low,
// inclusive high, self low, self high] in ns. A tracer's entry comes after the
// caller's clock read and before the body's first; its return after the
// body's last and before the caller's read: a call's traced duration lies in
// [body, site], its self time in [body - children's sites, site - children's
// bodies] (only children that returned are subtracted).
package main

import (
	"sync"
	"time"
)

const selfRecurseDepth = 3

// span is one returned traced call as its caller measured it (site) and as
// it measured its own body.
type span struct {
	siteNs int64
	bodyNs int64
}

var selfBounds = struct {
	sync.Mutex
	calls map[string][][4]int64
}{calls: map[string][][4]int64{}}

// tracedSelf calls fn, which calls one traced function `name` with the body
// it times and the list its traced children that return are added to; records
// the call's bounds and, for a caller, its span in `parent`.
func tracedSelf(name string, parent *[]span, fn func(b *body, children *[]span)) {
	b := &body{}
	var children []span
	start := time.Now()
	fn(b, &children)
	site := time.Since(start).Nanoseconds()
	var childSites, childBodies int64
	for _, child := range children {
		childSites += child.siteNs
		childBodies += child.bodyNs
	}
	selfLow := b.ns - childSites
	if selfLow < 0 {
		selfLow = 0
	}
	selfBounds.Lock()
	selfBounds.calls[name] = append(selfBounds.calls[name], [4]int64{b.ns, site, selfLow,
		site - childBodies})
	selfBounds.Unlock()
	truthOf(name).recordReturn(site, b, false)
	if parent != nil {
		*parent = append(*parent, span{site, b.ns})
	}
}

//go:noinline
func selfLeafA(b *body) {
	b.begin()
	time.Sleep(500 * time.Microsecond)
	b.end()
}

//go:noinline
func selfLeafB(b *body) {
	b.begin()
	time.Sleep(time.Millisecond)
	b.end()
}

// Called with panics true: a function that always panics would have no `ret`
// to probe (and would not be traced at all).
//
//go:noinline
func selfPanicky(b *body, panics bool) {
	b.begin()
	time.Sleep(200 * time.Microsecond)
	if panics {
		panic("go-workload: selfPanicky panics on purpose")
	}
	b.end()
}

// recoverFrom runs fn and recovers its panic: the traced call in it never
// returns (abandoned), and no caller above sees the panic.
func recoverFrom(name string, fn func()) {
	defer func() {
		if recover() != nil {
			truthOf(name).recordAbandoned()
		}
	}()
	fn()
}

//go:noinline
func selfParent(b *body, children *[]span) {
	b.begin()
	time.Sleep(300 * time.Microsecond)
	tracedSelf("main.selfLeafA", children, func(b *body, _ *[]span) { selfLeafA(b) })
	tracedSelf("main.selfLeafB", children, func(b *body, _ *[]span) { selfLeafB(b) })
	recoverFrom("main.selfPanicky", func() { selfPanicky(&body{}, true) })
	time.Sleep(300 * time.Microsecond)
	b.end()
}

//go:noinline
func selfRecurse(depth int, b *body, children *[]span) {
	b.begin()
	time.Sleep(300 * time.Microsecond)
	if depth > 1 {
		tracedSelf("main.selfRecurse", children, func(b *body, grand *[]span) {
			selfRecurse(depth-1, b, grand)
		})
	}
	b.end()
}

func runSelf(goroutines, rounds int) {
	// Made here, before the goroutines look them up (truthOf is not safe for
	// concurrent use; a truth's records are).
	for _, name := range []string{"main.selfParent", "main.selfLeafA", "main.selfLeafB",
		"main.selfPanicky", "main.selfRecurse"} {
		truthOf(name)
	}
	var done sync.WaitGroup
	start := make(chan struct{})
	done.Add(goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			defer done.Done()
			<-start
			for i := 0; i < rounds && keepGoing(); i++ {
				tracedSelf("main.selfParent", nil, selfParent)
				tracedSelf("main.selfRecurse", nil, func(b *body, children *[]span) {
					selfRecurse(selfRecurseDepth, b, children)
				})
			}
		}()
	}
	close(start)
	done.Wait()
}

// writeSelfBounds writes TRUTH.self.
func writeSelfBounds(path string) error {
	selfBounds.Lock()
	defer selfBounds.Unlock()
	return writeJSON(path, selfBounds.calls)
}

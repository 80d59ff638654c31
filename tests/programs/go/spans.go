// The "spans" scenario: latencies that begin in one Go function and end in
// another, for funclatency's --span on Go code (tests/e2e/test_go_spans.py).
// Two kinds, run at once by --goroutines goroutines (default 40, more than
// the --procs 2 threads), --calls rounds each (default 10):
//
//	handle   main.spanBegin's entry to main.spanFinish's return on one
//	         goroutine, which sleeps and yields in between (it resumes on
//	         another thread: truth "migrated"); matched by the goroutine.
//	job      main.spanSubmit(id) on the goroutine to main.spanDone(id) on one
//	         of 4 worker goroutines after 2 ms; matched by the job id.
//	created  the same job from main.spanNewID's return (its result, the id)
//	         to main.spanDone(id).
//
// Each span's truth is bounded by what the program measures: no shorter than
// from the start function's return to the end function's call, no longer
// than from the start function's call to the end function's return.
package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	spanSleep      = 1 * time.Millisecond
	spanJobSleep   = 2 * time.Millisecond
	spanJobWorkers = 4
)

// spanTruth is what the program knows of one span's instances.
type spanTruth struct {
	mu        sync.Mutex
	count     uint64
	migrated  uint64
	minLowNs  int64
	maxHighNs int64
	sumLowNs  int64
	sumHighNs int64
}

type spanJSON struct {
	Name      string `json:"name"`
	Count     uint64 `json:"count"`
	Migrated  uint64 `json:"migrated"`
	MinLowNs  int64  `json:"min_low_ns"`
	MaxHighNs int64  `json:"max_high_ns"`
	SumLowNs  int64  `json:"sum_low_ns"`
	SumHighNs int64  `json:"sum_high_ns"`
}

var (
	handleTruth  = &spanTruth{}
	jobTruth     = &spanTruth{}
	createdTruth = &spanTruth{}
	spanTruths   = map[string]*spanTruth{}
)

func (t *spanTruth) add(low, high time.Duration, migrated bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count == 0 || int64(low) < t.minLowNs {
		t.minLowNs = int64(low)
	}
	if int64(high) > t.maxHighNs {
		t.maxHighNs = int64(high)
	}
	t.count++
	t.sumLowNs += int64(low)
	t.sumHighNs += int64(high)
	if migrated {
		t.migrated++
	}
}

func (t *spanTruth) toJSON(name string) spanJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	return spanJSON{Name: name, Count: t.count, Migrated: t.migrated, MinLowNs: t.minLowNs,
		MaxHighNs: t.maxHighNs, SumLowNs: t.sumLowNs, SumHighNs: t.sumHighNs}
}

//go:noinline
func spanBegin(round int) int {
	return round + 1
}

//go:noinline
func spanFinish(round int) int {
	return round * 2
}

// spanNewID's result is a new job id (far from small integers, so no other
// register holds one by chance).
//
//go:noinline
func spanNewID(next *atomic.Int64) int {
	return int(1<<40 + next.Add(1))
}

//go:noinline
func spanSubmit(id int) int {
	return id ^ 1
}

//go:noinline
func spanDone(id int) int {
	return id ^ 2
}

// job is one submitted job and its times, as its submitter measured them.
type job struct {
	id          int
	callNew     time.Time
	afterNew    time.Time
	callSubmit  time.Time
	afterSubmit time.Time
}

func runSpans(goroutines, rounds int) {
	spanTruths["handle"] = handleTruth
	spanTruths["job"] = jobTruth
	spanTruths["created"] = createdTruth
	jobs := make(chan job, goroutines*rounds+1)
	var workers sync.WaitGroup
	workers.Add(spanJobWorkers)
	for w := 0; w < spanJobWorkers; w++ {
		go func() {
			defer workers.Done()
			for j := range jobs {
				time.Sleep(spanJobSleep)
				beforeDone := time.Now()
				spanDone(j.id)
				afterDone := time.Now()
				jobTruth.add(beforeDone.Sub(j.afterSubmit), afterDone.Sub(j.callSubmit), false)
				createdTruth.add(beforeDone.Sub(j.afterNew), afterDone.Sub(j.callNew), false)
			}
		}()
	}
	var nextID atomic.Int64
	var done sync.WaitGroup
	done.Add(goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			defer done.Done()
			for round := 0; round < rounds && keepGoing(); round++ {
				tid := syscall.Gettid()
				callBegin := time.Now()
				spanBegin(round)
				afterBegin := time.Now()
				time.Sleep(spanSleep)
				runtime.Gosched()
				beforeFinish := time.Now()
				spanFinish(round)
				handleTruth.add(beforeFinish.Sub(afterBegin), time.Since(callBegin),
					syscall.Gettid() != tid)

				callNew := time.Now()
				id := spanNewID(&nextID)
				afterNew := time.Now()
				callSubmit := time.Now()
				spanSubmit(id)
				jobs <- job{id: id, callNew: callNew, afterNew: afterNew, callSubmit: callSubmit,
					afterSubmit: time.Now()}
			}
		}()
	}
	done.Wait()
	close(jobs)
	workers.Wait()
}

func spansJSON() []spanJSON {
	out := []spanJSON{}
	for _, name := range []string{"handle", "job", "created"} {
		if t, ok := spanTruths[name]; ok {
			out = append(out, t.toJSON(name))
		}
	}
	return out
}

// The Go benchmark workload: bench/hot_target.c's protocol with one Go
// function, main.hot, called N times in a tight loop in one or more
// goroutines, each locked to its own OS thread (so the thread's CPU clock is
// the calls' cost, probe handling included).
//
// main.hot is //go:noinline and not a leaf (it calls rare, never taken), so
// the compiler keeps its stack check: it starts with
//
//	cmp rsp, [r14+0x10]   (single-stepped by a uprobe at +0)
//	jbe <morestack>       (emulated: funclatency's entry probe goes here)
//
// and it has a small frame. bench/run finds the offsets with objdump.
//
// Protocol with bench/run: prints "ready PID" and waits for a line on stdin
// (so a tracer can attach first), runs, prints one result line per thread and
// one summary line, and exits:
//
//	thread=I calls=N wall_ns_per_call=X cpu_ns_per_call=Y
//	function=main.hot threads=T calls=N*T wall_ns_per_call=X cpu_ns_per_call=Y
//
// Standard library only.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

//go:noinline
func rare(x uint64) uint64 {
	return x ^ 0x5bd1e995
}

// The function under test. The call to rare (never made: the loop counts
// from 0) keeps the stack-check prologue a leaf function would lose.
//
//go:noinline
func hot(x uint64) uint64 {
	if x == ^uint64(0) {
		return rare(x)
	}
	return x*3 + 1
}

const burst = 50 // calls between clock checks when rate-limited

func callRange(first, count uint64) uint64 {
	var acc uint64
	for i := first; i < first+count; i++ {
		acc += hot(i)
	}
	return acc
}

// threadCPUNs is CLOCK_THREAD_CPUTIME_ID of the calling OS thread.
func threadCPUNs() uint64 {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec)
}

type worker struct {
	calls       uint64
	callsPerSec float64 // 0: as fast as possible
	wallNs      uint64
	cpuNs       uint64
	sink        uint64
}

func (w *worker) run(start <-chan struct{}, done *sync.WaitGroup, ready *sync.WaitGroup) {
	defer done.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ready.Done()
	<-start
	wall0 := time.Now()
	cpu0 := threadCPUNs()
	var acc uint64
	if w.callsPerSec <= 0 {
		acc = callRange(0, w.calls)
	} else {
		// Keep the cumulative schedule: burst k starts at k * burst / rate.
		nsPerCall := 1e9 / w.callsPerSec
		for done := uint64(0); done < w.calls; {
			due := time.Duration(float64(done) * nsPerCall)
			for time.Since(wall0) < due {
			}
			n := w.calls - done
			if n > burst {
				n = burst
			}
			acc += callRange(done, n)
			done += n
		}
	}
	w.cpuNs = threadCPUNs() - cpu0
	w.wallNs = uint64(time.Since(wall0).Nanoseconds())
	w.sink = acc
}

func main() {
	fs := flag.NewFlagSet("go_hot_target", flag.ContinueOnError)
	function := fs.String("f", "hot", "which function (only hot)")
	calls := fs.Uint64("n", 1000000, "calls per thread")
	threads := fs.Int("t", 1, "threads (goroutines, each locked to an OS thread)")
	rate := fs.Float64("r", 0, "rate limit per thread in calls/s (default none)")
	noWait := fs.Bool("no-wait", false, "start at once instead of waiting for a line on stdin")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *function != "hot" || *calls == 0 || *threads < 1 || *threads > 64 || fs.NArg() != 0 {
		fs.Usage()
		os.Exit(2)
	}
	if runtime.GOMAXPROCS(0) < *threads {
		runtime.GOMAXPROCS(*threads)
	}

	workers := make([]worker, *threads)
	start := make(chan struct{})
	var done, ready sync.WaitGroup
	for i := range workers {
		workers[i] = worker{calls: *calls, callsPerSec: *rate}
		done.Add(1)
		ready.Add(1)
		go workers[i].run(start, &done, &ready)
	}
	ready.Wait()

	fmt.Printf("ready %d\n", os.Getpid())
	if !*noWait {
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			os.Exit(1)
		}
	}
	close(start)
	done.Wait()

	var wallSum, cpuSum float64
	for i, w := range workers {
		wall := float64(w.wallNs) / float64(*calls)
		cpu := float64(w.cpuNs) / float64(*calls)
		wallSum += wall
		cpuSum += cpu
		fmt.Printf("thread=%d calls=%d wall_ns_per_call=%.1f cpu_ns_per_call=%.1f\n", i, *calls,
			wall, cpu)
	}
	n := float64(*threads)
	fmt.Printf("function=main.hot threads=%d calls=%d wall_ns_per_call=%.1f cpu_ns_per_call=%.1f\n",
		*threads, *calls*uint64(*threads), wallSum/n, cpuSum/n)
}

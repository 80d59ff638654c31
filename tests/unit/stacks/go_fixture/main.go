// A Go program whose main goroutine, locked to the main thread, blocks in a
// read of stdin under main.outer -> main.middle -> main.inner, so that
// go_stack_test.cpp can stop the thread there and unwind its stack (Go
// keeps frame pointers and has no .eh_frame). Prints "ready" first.
package main

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

//go:noinline
func inner(fd int) int {
	var buffer [1]byte
	n, _ := syscall.Read(fd, buffer[:])
	return n + 1
}

//go:noinline
func middle(fd int) int { return inner(fd) * 2 }

//go:noinline
func outer(fd int) int { return middle(fd) + 3 }

func main() {
	runtime.LockOSThread()
	fmt.Fprintln(os.Stdout, "ready")
	os.Exit(outer(0) & 1)
}

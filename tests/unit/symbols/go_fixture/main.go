// A small Go program whose functions the Go reader's tests look up by name,
// built by CMake with and without symbols (-ldflags=-s -w).
package main

import (
	"fmt"
	"os"
)

type counter struct{ total int }

// add is a method on a pointer receiver: named main.(*counter).add.
//
//go:noinline
func (c *counter) add(value int) int {
	c.total += value
	return c.total
}

//go:noinline
func work(n int) int {
	sum := 0
	for i := 0; i < n; i++ {
		sum += i * i
	}
	return sum
}

// apply takes a function value, so the closure in main stays a function
// of its own: main.main.func1.
//
//go:noinline
func apply(f func(int) int, value int) int { return f(value) }

func main() {
	c := &counter{}
	result := apply(func(n int) int { return c.add(work(n)) }, len(os.Args)+10)
	fmt.Fprintln(os.Stdout, result)
}

// The Go stack fixture of go_stack_test.cpp: standard library only, built offline.
module gostack

go 1.19

package main

import (
	"bufio"
	"io"
)

// buffered puts a 64 KiB buffer in front of w and returns it with the
// function that flushes it. A command that prints a lot (a board of 100k
// entries, every problem of a large plan) then makes a few write(2) calls
// instead of one or more per line. Commands that stream as things happen
// (board watch, the live display) write to w directly.
func buffered(w io.Writer) (*bufio.Writer, func()) {
	b := bufio.NewWriterSize(w, 64<<10)
	return b, func() { b.Flush() }
}

package main

import (
	"fmt"
	"io"
)

// cmdApply is replaced by the diff applier's command.
func cmdApply(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "runner apply: not built yet")
	return exitUsage
}

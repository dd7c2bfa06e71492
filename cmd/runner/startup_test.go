package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestStartupInitIsSmall: what runner's own packages do before main
// (package variables and init functions), which every command pays
// however little it does, allocates under 128 KB. Templates and regular
// expressions a command may never use are built on first use: the
// serve package's pages and the diff applier's markers took 230 KB, 3,200
// allocations and about a quarter of `runner version`'s CPU
// at start-up. Allocations, not time: the runtime reports them exactly.
func TestStartupInitIsSmall(t *testing.T) {
	cmd := exec.Command(binary, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("runner version: %v\n%s", err, out)
	}
	total, lines := 0, 0
	var heavy []string
	for _, l := range strings.Split(string(out), "\n") {
		// init github.com/planrunner/runner/serve @10 ms, 0.87 ms clock, 162616 bytes, 2548 allocs
		f := strings.Fields(l)
		if len(f) < 10 || f[0] != "init" || (f[1] != "main" && !strings.HasPrefix(f[1], "github.com/planrunner/runner")) {
			continue
		}
		n, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("unexpected inittrace line %q", l)
		}
		total += n
		lines++
		if n > 16<<10 {
			heavy = append(heavy, l)
		}
	}
	if lines < 5 {
		t.Fatalf("found %d init lines of runner's packages in:\n%s", lines, out)
	}
	if total > 128<<10 {
		t.Errorf("runner's packages allocate %d bytes before main; the heaviest:\n%s", total, strings.Join(heavy, "\n"))
	}
}

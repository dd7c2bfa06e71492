package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/sys/boot"
)

// `runner worker --help` lists every flag runner-temporal's worker takes,
// each with its help: the flag set the worker parses (boot.WorkerFlags)
// is the one compared, so a flag added there without help, or left out
// of runner's, fails here.
func TestWorkerHelpListsEveryWorkerFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"worker", "--help"}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("runner worker --help: exit %d\n%s", code, stderr.String())
	}
	help := stdout.String() + stderr.String()
	flat := strings.Join(strings.Fields(help), " ")
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	boot.WorkerFlags(fs, &boot.Worker{})
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		_, usage := flag.UnquoteUsage(f)
		if strings.TrimSpace(usage) == "" {
			t.Errorf("the worker's flag %s has no help", dashed(f.Name))
		}
		if !strings.Contains(help, "\n  "+dashed(f.Name)+"\n") && !strings.Contains(help, "\n  "+dashed(f.Name)+" ") {
			t.Errorf("runner worker --help does not list %s", dashed(f.Name))
		} else if !strings.Contains(flat, strings.Join(strings.Fields(usage), " ")) {
			t.Errorf("runner worker --help does not give %s its help %q", dashed(f.Name), usage)
		}
	})
	// The connection, the store, TLS, logging and the worker's own.
	for _, name := range []string{"temporal", "tls-ca", "s3-endpoint", "log-format", "expect-store-id", "work-root"} {
		if fs.Lookup(name) == nil {
			t.Errorf("the worker's flags lack --%s", name)
		}
	}
	if n < 20 {
		t.Errorf("only %d worker flags compared", n)
	}
}

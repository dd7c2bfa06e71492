package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/agents"
)

// runner-temporal reads the user's prices file as it starts, as runner
// does: a file that does not read stops it before it dials, naming the
// file; a missing one is no prices.
func TestStartReadsPricesFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("models:\n  m: {input: -1, output: 1}\n"), 0o644)
	t.Cleanup(func() { agents.UsePricesFile("") })
	for _, tc := range []struct {
		file    string
		code    int
		wantErr string
	}{
		{bad, exitUsage, "prices file " + bad + ": model m: a price must not be negative"},
		{filepath.Join(dir, "none.yaml"), exitUsage, "--temporal HOST:PORT is required"},
	} {
		t.Setenv("RUNNER_PRICES", tc.file)
		t.Setenv("TEMPORAL_ADDRESS", "")
		var out, errb bytes.Buffer
		code := run([]string{"worker"}, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.file, code, errb.String(), tc.code, tc.wantErr)
		}
	}
}

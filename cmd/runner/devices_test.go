package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A file a person names on the command line may be a device or a named
// pipe (/dev/null, /dev/stdout, `>(cmd)`): a report or JUnit XML is
// written through it, a run's board is refused there (it is a file
// replaced as the run goes), and the device is never replaced, which as
// root would break it for the whole machine.
func TestOutputsToDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a device node takes root")
	}
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("version: 1\nname: one\nsteps:\n  - {label: a, type: command, run: \"true\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := runCLI(t, dir, "run", "-q", plan)
	if seed.code != 0 {
		t.Fatalf("seed run: exit %d\n%s", seed.code, seed.stderr)
	}
	bb := blackboardPath(t, seed.stdout)
	tests := []struct {
		name string
		args func(dev string) []string
		code int
		say  string // in stderr
	}{
		{"run --out", func(dev string) []string { return []string{"run", "--out", dev, plan} }, 2, "is not a regular file (a character device)"},
		{"replay --out", func(dev string) []string { return []string{"replay", bb, "--offline", "--out", dev} }, 1, "is not a regular file (a character device)"},
		{"run --junit", func(dev string) []string { return []string{"run", "-q", "--junit", dev, plan} }, 0, ""},
		{"report -o", func(dev string) []string { return []string{"report", bb, "-o", dev} }, 0, ""},
		{"report --format junit -o", func(dev string) []string { return []string{"report", bb, "--format", "junit", "-o", dev} }, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dev := filepath.Join(t.TempDir(), "null")
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Skipf("mknod: %v", err)
			}
			res := runCLI(t, dir, tt.args(dev)...)
			if res.code != tt.code || !strings.Contains(res.stderr, tt.say) {
				t.Errorf("exit %d, want %d saying %q; stderr:\n%s", res.code, tt.code, tt.say, res.stderr)
			}
			fi, err := os.Lstat(dev)
			if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
				t.Fatalf("the device was replaced: %v %v", fi.Mode(), err)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dev), "*")); len(left) != 1 {
				t.Errorf("files made beside the device: %v", left)
			}
		})
	}
}

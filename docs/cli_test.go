package docs_test

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite cli.md from the commands' help")

// cliReference is docs/cli.md: `runner help`, then each command's -h (and
// each subcommand's, for a command that has them), as the built binary
// prints them.
func cliReference(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	top := run(t, home, home, "help").out
	var b strings.Builder
	b.WriteString("# Command line reference\n\n")
	b.WriteString("<!-- Generated from the commands' help by `go test ./docs/ -run TestCLIReference -update`; do not edit. -->\n\n")
	b.WriteString("Every command and flag, as `runner help` and `runner COMMAND -h` print them.\n")
	b.WriteString("The contract is [spec.md §5](spec.md#5-command-line); what a run shows, the\n")
	b.WriteString("global flags and the exit codes are explained in [running.md](running.md).\n\n")
	section := func(title, text string) {
		b.WriteString("## " + title + "\n\n```text\n" + strings.TrimRight(text, "\n") + "\n```\n\n")
	}
	section("runner help", top)
	for _, c := range commands(t) {
		section("runner "+c, help(t, c))
		for _, sub := range subcommands(t, c) {
			section("runner "+c+" "+sub, help(t, c, sub))
		}
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

// docs/cli.md is what the help prints now: change a command's usage,
// examples or flags and this fails until the reference is regenerated
// (go test ./docs/ -run TestCLIReference -update).
func TestCLIReference(t *testing.T) {
	got := cliReference(t)
	if *update {
		if err := os.WriteFile("cli.md", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("cli.md")
	if err != nil {
		t.Fatalf("%v (make it with: go test ./docs/ -run TestCLIReference -update)", err)
	}
	if string(want) != got {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) || i < len(wl); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/cli.md differs from the commands' help at line %d:\n  cli.md: %q\n  help:   %q\nregenerate it: go test ./docs/ -run TestCLIReference -update", i+1, w, g)
			}
		}
	}
}

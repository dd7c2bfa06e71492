package plans

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Every YAML syntax error points at its true line and column with a hint:
// never 1:1 for a problem elsewhere, never "YAML: yaml:". Each
// testdata/yamlerr/NAME.yaml has its expected errors in NAME.golden
// (go test ./plans -run YAMLErrors -update rewrites them).
func TestYAMLErrorsGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/yamlerr/*.yaml")
	if len(files) == 0 {
		t.Fatal("no cases")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(filepath.Base(f), src)
			if err == nil {
				t.Fatal("no error")
			}
			got := err.Error() + "\n"
			if strings.Contains(got, ": yaml: ") || strings.Contains(got, "YAML: ") || strings.Contains(got, ":1:1:") {
				t.Errorf("a raw or unpositioned error:\n%s", got)
			}
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				os.WriteFile(golden, []byte(got), 0o644)
				return
			}
			want, _ := os.ReadFile(golden)
			if got != string(want) {
				t.Errorf("got:\n%swant:\n%s", got, want)
			}
		})
	}
}

// An alias bomb is refused at once, wherever its aliases are (under vars,
// steps, parallel), with one budget for the whole document.
func TestAliasBombRefusedQuickly(t *testing.T) {
	for _, f := range []string{"alias_bomb.yaml", "alias_bomb_steps.yaml"} {
		src, err := os.ReadFile("testdata/yamlerr/" + f)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = Parse(f, src)
		if err == nil || !strings.Contains(err.Error(), "alias bomb") {
			t.Errorf("%s: %v", f, err)
		}
		t.Logf("%s refused in %v", f, time.Since(start))
	}
}

// Merge keys work, and an anchor used by every step of a large plan
// stays well within the alias budget.
func TestMergeKeysAndModestAliases(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nlimits: {max_steps: 5000}\nsteps:\n  - &c {label: s0, type: command, run: echo hi, timeout: 5s}\n")
	for i := 1; i < 5000; i++ {
		fmt.Fprintf(&b, "  - {<<: *c, label: s%d}\n", i)
	}
	p, err := Parse("p.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Lookup("s4999"); s == nil || s.Type != "command" || s.Timeout != 5*time.Second {
		t.Errorf("merged step %+v", s)
	}
	src := "version: 1\nsteps:\n  - &s {label: a, type: command, run: echo, timeout: 5s}\n  - {<<: *s, label: b, timeout: 1s}\n"
	p, err = Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Lookup("b"); s == nil || s.Type != "command" || s.Timeout != time.Second {
		t.Errorf("merged step %+v", s)
	}
}

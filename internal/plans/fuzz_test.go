package plans

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzLoad feeds plans to Parse: no input may panic, hang or exhaust
// memory, and every problem must come back as positioned Errors. The seed
// corpus holds alias bombs, deep nesting and every syntax error case.
//
//	go test ./plans -run '^$' -fuzz FuzzLoad -fuzztime 5m
func FuzzLoad(f *testing.F) {
	files, _ := filepath.Glob("testdata/yamlerr/*.yaml")
	for _, file := range files {
		src, _ := os.ReadFile(file)
		f.Add(src)
	}
	f.Add([]byte("version: 1\nsteps:\n  - {label: a, type: command, run: echo}\n"))
	f.Add([]byte("version: 1\nsteps:\n  - label: g\n    parallel:\n" + strings.Repeat("      - label: h\n        parallel:\n", 1)))
	f.Add([]byte("version: 1\nsteps: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"))
	f.Add([]byte("version: 1\nvars: " + strings.Repeat("{a: ", 3000) + "1" + strings.Repeat("}", 3000) + "\n"))
	f.Add([]byte(deepParallel(200)))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("version: 1\nsteps:\n  - &s {label: a, type: x, <<: *s}\n"))
	f.Add([]byte(lolVars()))
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Parse("f.yaml", src)
		if err == nil {
			return
		}
		var list Errors
		if !errors.As(err, &list) {
			t.Fatalf("not Errors: %T %v", err, err)
		}
		for _, e := range list {
			if e.Line < 1 || e.Col < 1 || e.Msg == "" {
				t.Fatalf("unpositioned: %v", e)
			}
		}
	})
}

func deepParallel(depth int) string {
	var b strings.Builder
	b.WriteString("version: 1\nsteps:\n")
	ind := "  "
	for i := range depth {
		b.WriteString(ind + "- label: g" + strconv.Itoa(i) + "\n" + ind + "  parallel:\n")
		ind += "    "
	}
	b.WriteString(ind + "- {label: leaf, type: command, run: echo}\n")
	return b.String()
}

// lolVars is the classic "billion laughs" under vars.
func lolVars() string {
	s := "version: 1\nvars:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		s += "  " + n + ": &" + n + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
		prev = n
	}
	return s + "steps: []\n"
}

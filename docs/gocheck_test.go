package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goTestFlags are the flags of `go test` and its test binary; any other
// flag a docs command gives must be one the package's tests define.
var goTestFlags = map[string]bool{}

func init() {
	for _, f := range strings.Fields(`run bench benchtime benchmem count cpu v short timeout race fuzz
		fuzztime fuzzminimizetime parallel memprofile memprofilerate cpuprofile blockprofile mutexprofile
		coverprofile cover covermode coverpkg failfast list json tags o p x n a c vet shuffle skip
		trimpath ldflags gcflags mod exec args work trace outputdir`) {
		goTestFlags[f] = true
	}
}

// goValueFlags take a value as the next word.
var goValueFlags = map[string]bool{"run": true, "bench": true, "benchtime": true, "count": true,
	"cpu": true, "timeout": true, "fuzz": true, "fuzztime": true, "parallel": true, "memprofile": true,
	"cpuprofile": true, "coverprofile": true, "tags": true, "o": true, "p": true, "skip": true,
	"ldflags": true, "gcflags": true, "mod": true, "exec": true, "shuffle": true, "trace": true}

// checkGo checks a go command the docs show without running it: the
// packages and files it names exist, its -run, -bench and -fuzz patterns
// match a test of the package, and its other flags are defined by the
// package's tests. Benchmarks take minutes; a renamed benchmark or moved
// package should not leave its reproduction command broken.
func checkGo(t *testing.T, where, root string, c simple) {
	t.Helper()
	w := c.words
	if len(w) < 2 || w[0] != "go" {
		return
	}
	switch w[1] {
	case "test", "build", "install", "run", "vet", "generate":
	default:
		return
	}
	dir := filepath.Join(root, c.dir)
	var pkgs []string
	patterns := map[string]string{}
	var custom []string
	for i := 2; i < len(w); i++ {
		a := w[i]
		if strings.HasPrefix(a, "-") && !strings.Contains(a, " ") {
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			isCustom := w[1] == "test" && !goTestFlags[name]
			if isCustom {
				custom = append(custom, name)
			}
			// a flag of the tests' own takes the next word as its value
			// unless that word is a flag or a package
			next := ""
			if i+1 < len(w) {
				next = w[i+1]
			}
			if isCustom && !hasValue && next != "" && !strings.HasPrefix(next, "-") && !strings.HasPrefix(next, ".") {
				i++
				continue
			}
			if goValueFlags[name] && !hasValue && i+1 < len(w) {
				i++
				value = w[i]
			}
			switch name {
			case "run", "bench", "fuzz":
				patterns[name] = value
			}
			continue
		}
		if a == "." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") || strings.HasSuffix(a, ".go") {
			pkgs = append(pkgs, a)
		}
		if w[1] == "run" && len(pkgs) > 0 {
			break // the rest are the program's arguments
		}
	}
	for _, p := range pkgs {
		path := filepath.Join(dir, strings.TrimSuffix(p, "/..."))
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s: %s does not exist", where, p)
			return
		}
	}
	if w[1] != "test" || len(pkgs) != 1 || strings.HasSuffix(pkgs[0], "...") {
		return
	}
	src := testSources(t, filepath.Join(dir, pkgs[0]))
	names := testFunc.FindAllStringSubmatch(src, -1)
	for flag, pat := range patterns {
		if pat == "XXX" || pat == "^$" || pat == "." {
			continue
		}
		first, _, _ := strings.Cut(pat, "/")
		re, err := regexp.Compile(first)
		if err != nil {
			t.Errorf("%s: -%s %q: %v", where, flag, pat, err)
			continue
		}
		found := false
		for _, n := range names {
			kind := n[1]
			if (flag == "bench") != (kind == "Benchmark") || flag == "fuzz" && kind != "Fuzz" {
				continue
			}
			if re.MatchString(kind + n[2]) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: -%s %q matches no test of %s", where, flag, pat, pkgs[0])
		}
	}
	for _, name := range custom {
		if !strings.Contains(src, `"`+name+`"`) {
			t.Errorf("%s: flag -%s is neither go test's nor defined by the tests of %s", where, name, pkgs[0])
		}
	}
}

var testFunc = regexp.MustCompile(`(?m)^func (Test|Benchmark|Fuzz|Example)(\w*)\(`)

// testSources is the text of a package's test files.
func testSources(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// shellBlock reports whether a fenced block holds commands to type.
func shellBlock(lang string) bool {
	switch lang {
	case "sh", "bash", "console", "shell":
		return true
	}
	return false
}

// Every runner command in the docs' shell blocks works. Each block runs in
// a scratch directory of its own holding a copy of examples/ (HOME there
// too), top to bottom, so a later line may use what an earlier one wrote
// (bb.json). A command is run when it needs nothing from outside: every
// file it names exists there, no key is in its environment, no pipe feeds
// it, and its comment does not start with "needs". Any other runner
// command is checked instead: the command exists and takes every flag
// given. `# exit N` states the exit code a run must end with (default 0).
func TestCommandsInDocs(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, c := range commands(t) {
		known[c] = true
	}
	var ran, checked []string
	for _, p := range pages(t) {
		blocks, _ := split(p.text)
		for _, b := range blocks {
			if !shellBlock(b.lang) {
				continue
			}
			scratch := t.TempDir()
			home := filepath.Join(scratch, ".home")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(filepath.Join(scratch, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
				t.Fatal(err)
			}
			inRepo := func(dir string) bool {
				fi, err := os.Stat(filepath.Join(root, dir))
				return err == nil && fi.IsDir()
			}
			cmds, comments := commandsOf(b.body, inRepo)
			for i, c := range cmds {
				where := p.path + ":" + itoa(b.line) + ": " + strings.Join(c.words, " ")
				args, ok := runnerArgs(c.words)
				if !ok {
					checkGo(t, where, root, c)
					continue
				}
				if reason := checkRunner(t, args, known); reason != "" {
					t.Errorf("%s: %s", where, reason)
					continue
				}
				if !runnable(t, c, args, comments[i], scratch) {
					checked = append(checked, where)
					continue
				}
				want := 0
				if m := exitComment.FindStringSubmatch(comments[i]); m != nil {
					want, _ = strconv.Atoi(m[1])
				}
				r := run(t, filepath.Join(scratch, c.dir), home, args...)
				if r.code != want {
					t.Errorf("%s: exit %d, want %d:\n%s", where, r.code, want, tail(r.out, 15))
				}
				ran = append(ran, where)
			}
		}
	}
	if len(ran) == 0 {
		t.Fatal("ran no command from the docs; the block reader is broken")
	}
	t.Logf("ran %d commands, checked %d without running them", len(ran), len(checked))
	for _, w := range ran {
		t.Logf("ran: %s", w)
	}
	for _, w := range checked {
		t.Logf("checked, not run: %s", w)
	}
}

var exitComment = regexp.MustCompile(`(?:^|\s)exit (\d+)`)

// runnerArgs returns a command's arguments when it is runner: `runner`,
// a path to a runner binary, or `go run ./cmd/runner`, possibly behind
// /usr/bin/time.
func runnerArgs(words []string) ([]string, bool) {
	for len(words) > 0 && (words[0] == "time" || words[0] == "/usr/bin/time") {
		words = words[1:]
		for len(words) > 0 && strings.HasPrefix(words[0], "-") {
			if words[0] == "-f" || words[0] == "-o" {
				words = words[1:]
			}
			words = words[1:]
		}
	}
	switch {
	case len(words) == 0:
		return nil, false
	case words[0] == "runner" || strings.HasSuffix(words[0], "/runner"):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && strings.TrimSuffix(words[2], "/") == "./cmd/runner":
		return words[3:], true
	}
	return nil, false
}

// globals are the flags every command takes, also before the command.
var globals = map[string]bool{"q": false, "log-format": true, "log-level": true}

// splitRunner separates the command (and a subcommand, when the command
// has them) from the rest.
func splitRunner(args []string) (cmd string, rest []string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		name := strings.TrimLeft(args[0], "-")
		args = args[1:]
		if globals[name] && len(args) > 0 {
			args = args[1:]
		}
	}
	if len(args) == 0 {
		return "", nil
	}
	return args[0], args[1:]
}

// checkRunner says what is wrong with a runner command line, or "".
func checkRunner(t *testing.T, args []string, known map[string]bool) string {
	cmd, rest := splitRunner(args)
	if cmd == "" || cmd == "help" {
		return ""
	}
	if !known[cmd] {
		return "runner has no command " + strconv.Quote(cmd)
	}
	accepted := flags(help(t, cmd))
	for _, w := range rest {
		if !strings.HasPrefix(w, "-") && isWord(w) {
			for _, sub := range subcommands(t, cmd) {
				if sub == w {
					for f, v := range flags(help(t, cmd, sub)) {
						accepted[f] = v
					}
				}
			}
		}
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if w == "--" && slices.Contains(rest[:i], "lock") {
			break // runner board FILE lock KEY -- CMD: the rest is the command's
		}
		if w == "-" || !strings.HasPrefix(w, "-") || w == "--" {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
		takesValue, ok := accepted[name]
		if !ok {
			// -p2 is -p 2, as patch and git apply take it
			if v, okp := accepted[name[:1]]; okp && v && isNumber(name[1:]) {
				continue
			}
			return "runner " + cmd + " has no flag " + w
		}
		if takesValue && !hasValue {
			i++
		}
	}
	return ""
}

// runnable reports whether a runner command can run here: it needs no
// key, no server, nothing a pipe or an expansion would give it, and every
// file it names is in the scratch directory.
func runnable(t *testing.T, c simple, args []string, comment, scratch string) bool {
	if c.piped || c.hasVar || strings.HasPrefix(comment, "needs") {
		return false
	}
	for _, e := range c.env {
		if name, _, _ := strings.Cut(e, "="); strings.Contains(name, "KEY") || strings.Contains(name, "TOKEN") {
			return false
		}
	}
	cmd, rest := splitRunner(args)
	if cmd == "worker" || cmd == "serve" || cmd == "a2a" {
		return false // it serves until stopped
	}
	accepted := map[string]bool{}
	for f, v := range flags(help(t, cmd)) {
		accepted[f] = v
	}
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		if strings.HasPrefix(w, "-") && w != "-" {
			name, _, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if name == "engine" || name == "temporal" {
				return false
			}
			_, value, _ := strings.Cut(w, "=")
			if accepted[name] && !hasValue && i+1 < len(rest) {
				i++
				value = rest[i]
				// inputs a run reads must be there; outputs (--out, -o) need not
				if (name == "plan" || name == "reuse") && !existsIn(scratch, c.dir, value) {
					return false
				}
			}
			if filepath.IsAbs(value) {
				return false // a path of the machine the docs were written on
			}
			continue
		}
		if w == "-" {
			return false // reads stdin
		}
		if looksLikePath(w) && !existsIn(scratch, c.dir, w) {
			return false
		}
	}
	return true
}

func looksLikePath(w string) bool {
	if strings.Contains(w, "/") {
		return true
	}
	for _, ext := range []string{".yaml", ".yml", ".json", ".patch", ".diff", ".html"} {
		if strings.HasSuffix(w, ext) {
			return true
		}
	}
	return false
}

// existsIn reports whether a path named by a command is inside the
// scratch directory and there; an absolute path never is.
func existsIn(scratch, dir, p string) bool {
	if p == "" || filepath.IsAbs(p) {
		return false
	}
	_, err := os.Stat(filepath.Join(scratch, dir, p))
	return err == nil
}

func isWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r == '-') {
			return false
		}
	}
	return true
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return s != "" && err == nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

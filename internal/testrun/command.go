package testrun

import (
	"regexp"
	"strings"
	"sync"
)

// wordAt finds word used as a command word in a shell command line: after
// the start, a blank, a path separator or a shell operator, and before a
// blank, an operator or the end. It returns the end of the word, or -1.
func wordAt(cmd, word string) int {
	re := regexp.MustCompile(`(?:^|[\s/;&|(])` + regexp.QuoteMeta(word) + `(?:$|[\s;&|)])`)
	loc := re.FindStringIndex(cmd)
	if loc == nil {
		return -1
	}
	return strings.Index(cmd[loc[0]:], word) + loc[0] + len(word)
}

func containsWord(cmd, word string) bool { return wordAt(cmd, word) >= 0 }

// insertAfter puts text after the first use of word in cmd, so flags land
// on the runner even in `cd x && npx jest; echo done`.
func insertAfter(cmd, word, text string) (string, bool) {
	i := wordAt(cmd, word)
	if i < 0 {
		return cmd, false
	}
	return cmd[:i] + " " + text + cmd[i:], true
}

// hints say how to install a missing runner, by the name of its binary.
var hints = map[string]string{
	"go":      "install Go from https://go.dev/dl/ (Debian: apt-get install golang-go)",
	"pytest":  "apt-get install python3-pytest (or: pip install pytest)",
	"python3": "apt-get install python3 python3-pytest",
	"python":  "apt-get install python3 python3-pytest",
	"cargo":   "install Rust with rustup (https://rustup.rs) or apt-get install cargo",
	"jest":    "npm install --save-dev jest",
	"vitest":  "npm install --save-dev vitest",
	"npx":     "apt-get install nodejs npm",
	"npm":     "apt-get install nodejs npm",
	"node":    "apt-get install nodejs",
}

// missingText says which binary is missing and how to get it.
func missingText(bin string) string {
	if h, ok := hints[bin]; ok {
		return bin + " not found: " + h
	}
	return bin + " not found"
}

var (
	// sh: 1: pytest: not found / bash: line 1: cargo: command not found /
	// env: 'node': No such file or directory
	shNotFound = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)(?:^|: )'?([\w.+-]+)'?: (?:command )?not found\s*$|env: '?([\w.+-]+)'?: No such file or directory`)
	})
	// npx --no: npm error npx canceled due to missing packages and no YES option: ["vitest@4.1.12"]
	npxMissing = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`npx canceled due to missing packages.*?\["?(@?[\w./-]+?)(?:@[^"\]]*)?"?[,\]]`)
	})
	npxNoExec   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`could not determine executable to run`) })
	pyNoPytest  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`No module named '?pytest'?(?:\s|$)`) })
	cargoNoTest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`no such (?:sub)?command: .?test`) })
)

// missingTool recognises, from a failed run's output, that the runner itself
// is not installed, and returns the binary's name.
func missingTool(exitCode int, output, fallback string) string {
	if exitCode == 0 {
		return ""
	}
	if m := npxMissing().FindStringSubmatch(output); m != nil {
		return m[1]
	}
	if npxNoExec().MatchString(output) {
		return fallback
	}
	if pyNoPytest().MatchString(output) && !strings.Contains(output, "Traceback") {
		return "pytest"
	}
	if exitCode == 127 {
		if m := shNotFound().FindStringSubmatch(output); m != nil {
			if m[1] != "" {
				return m[1]
			}
			return m[2]
		}
	}
	if cargoNoTest().MatchString(output) {
		return "cargo"
	}
	return ""
}

package proc

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A script that is one simple command (`go test ./...`, `true`) would
// only have sh find its program and start it: runner starts the program
// itself and saves the shell's start (about as much CPU as the program's
// own when it is `true`). Everything sh would do on the way is done the
// way /bin/sh (dash) does it: the program is looked for on the step's
// PATH, the environment loses the names sh drops and gets PWD as sh sets
// it, and a program that dies of a signal runner did not send is reported
// with sh's status (128+n) and sh's message. Whatever sh might treat
// differently (a builtin, an expansion, a program not found or not
// executable) still runs under `sh -c`.

// shBuiltins are the names dash runs itself, keywords included: `echo`
// is not /bin/echo. true and false are left out: their programs behave
// as the builtins do.
var shBuiltins = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "cd": true,
	"chdir": true, "command": true, "continue": true, "echo": true, "eval": true, "exec": true,
	"exit": true, "export": true, "fc": true, "fg": true, "getopts": true, "hash": true,
	"jobs": true, "kill": true, "local": true, "printf": true, "pwd": true, "read": true,
	"readonly": true, "return": true, "set": true, "shift": true, "test": true, "times": true,
	"trap": true, "type": true, "ulimit": true, "umask": true, "unalias": true, "unset": true,
	"wait": true, "case": true, "do": true, "done": true, "elif": true, "else": true, "esac": true,
	"fi": true, "for": true, "if": true, "in": true, "then": true, "until": true, "while": true,
	"!": true, "{": true, "}": true, "function": true, "select": true, "time": true,
}

// Argv is script's words when the script is one simple command whose
// words need no expansion and whose program is not a shell builtin: what
// Spec.Direct takes. ok is false for anything else.
func Argv(script string) (argv []string, ok bool) {
	if plainScript(script) && !strings.Contains(strings.TrimSpace(script), "\n") {
		// Words of plain characters on one line: nothing to parse (the
		// parser allocates tens of kilobytes a call, once a step).
		argv = strings.Fields(script)
		if len(argv) == 0 || shBuiltins[argv[0]] || strings.Contains(argv[0], "=") {
			return nil, false
		}
		return argv, true
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(script), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	if st.Negated || st.Background || st.Coprocess || len(st.Redirs) > 0 {
		return nil, false
	}
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Assigns) > 0 || len(call.Args) == 0 {
		return nil, false
	}
	for _, w := range call.Args {
		s, ok := plainWord(w)
		if !ok {
			return nil, false
		}
		argv = append(argv, s)
	}
	if argv[0] == "" || shBuiltins[argv[0]] {
		return nil, false
	}
	return argv, true
}

// plainWord is a word's text when sh would take it as it stands: plain
// characters, or single quotes.
func plainWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			for _, c := range p.Value {
				if !plainChar(c) {
					return "", false
				}
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	return b.String(), true
}

// plainChar: a character sh leaves alone outside quotes (no glob, tilde,
// escape, expansion or syntax).
func plainChar(c rune) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.ContainsRune("_-./,:+%@=^", c)
}

// plainScript: script is plain characters and blanks (no quote, comment,
// operator or expansion).
func plainScript(script string) bool {
	for _, c := range script {
		if c != ' ' && c != '\t' && c != '\n' && !plainChar(c) {
			return false
		}
	}
	return true
}

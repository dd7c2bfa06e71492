package proc

import (
	"slices"
	"testing"
)

// TestArgv: which scripts start without a shell (one simple command with
// nothing for sh to expand, not a builtin) and with what words.
func TestArgv(t *testing.T) {
	tests := []struct {
		script string
		want   []string // nil: through sh
	}{
		{"true", []string{"true"}},
		{"go test ./...\n", []string{"go", "test", "./..."}},
		{"make -j4 all", []string{"make", "-j4", "all"}},
		{"grep -c 'a b; $x' f.txt", []string{"grep", "-c", "a b; $x", "f.txt"}},
		{"/usr/bin/env A=1", []string{"/usr/bin/env", "A=1"}},
		{"echo hi", nil},                  // a builtin: dash's echo is not /bin/echo
		{"cd /tmp", nil},                  // changes the shell only
		{"test -f x", nil},                // builtin
		{"A=1 env", nil},                  // an assignment
		{"ls *.go", nil},                  // a glob
		{"ls ~", nil},                     // a tilde
		{"echo $HOME", nil},               // an expansion
		{`ls "a b"`, nil},                 // double quotes: left to sh
		{`ls a\ b`, nil},                  // an escape
		{"true; false", nil},              // two commands
		{"true && false", nil},            // a list
		{"true | cat", nil},               // a pipe
		{"true > out", nil},               // a redirection
		{"sleep 1 &", nil},                // background
		{"! true", nil},                   // negated
		{"true # done", []string{"true"}}, // a comment is nothing to sh
		{"if true; then :; fi", nil},      // a compound command
		{"f() { :; }", nil},               // a function
		{"''", nil},                       // no program name
		{"echo $(( 1 + ", nil},            // does not parse
		{"(true)", nil},                   // a subshell
		{"exec true", nil},                // exec is a builtin
		{"command -v go", nil},            // builtin
		{"true\n# trailing comment", []string{"true"}},
		{"true\nfalse", nil}, // two commands on two lines
		{"A=1", nil},         // an assignment alone
		{"  true  \n", []string{"true"}},
		{"", nil},
	}
	for _, tt := range tests {
		got, ok := Argv(tt.script)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("Argv(%q) = %q, %v; want %q", tt.script, got, ok, tt.want)
		}
	}
}

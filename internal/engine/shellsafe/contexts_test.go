package shellsafe

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// hostile is a value that would run commands, end a heredoc, expand
// variables and globs, or break out of quotes if it became syntax.
const hostile = "$(touch PWNED)`touch PWNED`'\"; touch PWNED #\\ $HOME * ${x:-y}\nEOF\n!x"

// Every shell context the analysis tells apart, as a user meets it: the
// script runs with the value arriving as data (out, with V for the value),
// or takes only an integer (arith: out is for the value 41), or the plan
// is refused at the value with a message saying why (refused). @@ is the
// ${{ }}; bash marks what dash cannot run.
func TestEveryShellContext(t *testing.T) {
	tests := []struct {
		context, run string
		bash         bool
		out          string
		arith        bool
		refused      string
	}{
		// words and quotes
		{context: "plain word", run: `printf '|%s|' @@`, out: "|V|"},
		{context: "part of a word", run: `printf '|%s|' a@@b`, out: "|aVb|"},
		{context: "double quotes", run: `printf '|%s|' "x @@ y"`, out: "|x V y|"},
		{context: "single quotes", run: `printf '|%s|' 'x @@ y'`, out: "|x V y|"},
		{context: "ANSI-C quotes", run: `printf '|%s|' $'x @@ y'`, bash: true, out: "|x V y|"},
		{context: "after a backslash", run: `echo \@@`, refused: "a ${{ }} right after a backslash"},
		{context: "comment", run: "# @@\nprintf '|%s|' ok", out: "|ok|"},
		// heredocs and here-strings
		{context: "unquoted heredoc", run: "cat <<EOF\n|@@|\nEOF", out: "|V|\n"},
		{context: "unquoted heredoc, tabs stripped", run: "cat <<-EOF\n\t|@@|\n\tEOF", out: "|V|\n"},
		{context: "quoted heredoc", run: "cat <<'EOF'\n@@\nEOF", refused: "a quoted heredoc (<<'EOF') expands nothing"},
		{context: "escaped heredoc delimiter", run: "cat <<\\EOF\n@@\nEOF", refused: "a quoted heredoc"},
		{context: "heredoc delimiter", run: "cat <<@@\nx\n", refused: "the script does not parse as shell"},
		{context: "heredoc read as a program", run: "python3 <<EOF\nprint('@@')\nEOF", refused: "python3 reads its program from its input"},
		{context: "here-string", run: `cat <<< "|@@|"`, bash: true, out: "|V|\n"},
		{context: "here-string read as a program", run: `bash <<< "echo @@"`, refused: "bash reads its program from its input"},
		// substitutions
		{context: "command substitution", run: `printf '|%s|' "$(printf %s @@)"`, out: "|V|"},
		{context: "backticks", run: "printf '|%s|' \"`printf %s @@`\"", out: "|V|"},
		{context: "process substitution", run: `cat <(printf '|%s|' @@)`, bash: true, out: "|V|"},
		{context: "output to a process substitution running it", run: `echo @@ > >(bash)`, refused: "process substitution that reads it as code"},
		{context: "shell -c inside a substitution", run: `x=$(bash -c "echo @@")`, refused: "bash -c runs this argument as shell code"},
		// parameters
		{context: "parameter default", run: `printf '|%s|' "${unset_var:-@@}"`, out: "|V|"},
		{context: "parameter assigned default", run: `: "${x:=@@}"; printf '|%s|' "$x"`, out: "|V|"},
		{context: "parameter replacement", run: `echo "${x/a/@@}"`, refused: "cannot stand in a ${x/…/…} replacement"},
		{context: "variable name", run: `echo $@@`, refused: "a ${{ }} cannot be a variable's name"},
		// assignments and declarations
		{context: "assignment", run: `x=@@; printf '|%s|' "$x"`, out: "|V|"},
		{context: "exported assignment read by sh -c", run: `export X=@@; sh -c 'printf "|%s|" "$X"'`, out: "|V|"},
		{context: "assignment before a command", run: `X=@@ sh -c 'printf "|%s|" "$X"'`, out: "|V|"},
		{context: "assignment's name", run: `@@=1`, refused: "a ${{ }} cannot be a name here (an assignment's variable)"},
		{context: "variable the shell runs", run: `PS4=@@ bash -x s.sh`, refused: "$PS4 is run as code"},
		{context: "nameref", run: `declare -n r=@@`, refused: "declare -n makes a variable refer to the name it is given"},
		{context: "integer variable", run: `declare -i n; n=@@; echo $((n+1))`, bash: true, arith: true, out: "42\n"},
		{context: "read's variable name", run: `read -r @@ </dev/null`, refused: "read takes variable names"},
		// arithmetic
		{context: "arithmetic expansion", run: `echo $(( @@ + 1 ))`, arith: true, out: "42\n"},
		{context: "arithmetic command", run: `(( n = @@ + 1 )); echo $n`, bash: true, arith: true, out: "42\n"},
		{context: "let", run: `let n=@@+1; echo $n`, bash: true, arith: true, out: "42\n"},
		{context: "C-style for", run: `for ((i=0; i<@@; i++)); do :; done; echo $((i+1))`, bash: true, arith: true, out: "42\n"},
		{context: "array subscript", run: `a[@@]=42; echo ${a[41]}`, bash: true, arith: true, out: "42\n"},
		{context: "[[ -eq ]]", run: `[[ @@ -eq 41 ]] && echo 42`, bash: true, arith: true, out: "42\n"},
		// compound commands
		{context: "case subject", run: `case @@ in "$MATCH") printf '|%s|' same;; esac`, out: "|same|"},
		{context: "case pattern", run: `case "$MATCH" in @@) printf '|%s|' "$MATCH";; *) echo no;; esac`, out: "|V|"},
		{context: "for list", run: `for x in @@; do printf '|%s|' "$x"; done`, out: "|V|"},
		{context: "for variable", run: `for @@ in a; do :; done`, refused: "a ${{ }} cannot be a name here (a for loop's variable)"},
		{context: "[[ == ]]", run: `[[ "$MATCH" == @@ ]] && printf '|%s|' yes`, bash: true, out: "|yes|"},
		{context: "[[ -v ]]", run: `[[ -v @@ ]]`, refused: "`-v` takes a variable name"},
		{context: "if and subshell", run: `if true; then (printf '|%s|' @@); fi`, out: "|V|"},
		{context: "function body", run: `f() { local x=@@; printf '|%s|' "$x"; }; f`, out: "|V|"},
		{context: "function's name", run: `@@() { :; }`, refused: "a ${{ }} cannot be a name here (a function's name)"},
		{context: "function running its input", run: "f() { sh; }\nf <<EOF\necho @@\nEOF", refused: "sh reads its program from its input"},
		// redirections and pipelines
		{context: "redirection's file", run: `printf '|%s|' ok > @@; cat -- @@`, out: "|ok|"},
		{context: "pipeline to a program reading data", run: `printf '|%s|' @@ | cat`, out: "|V|"},
		{context: "pipeline to a shell", run: `echo @@ | sh`, refused: "piped to one that reads it as code: sh reads its program"},
		{context: "input turned into shell code", run: `echo @@ | xargs -I{} sh -c 'echo {}'`, refused: "xargs turns its input into arguments"},
		// commands that run their arguments
		{context: "command name", run: `@@ --help`, refused: "a ${{ }} cannot be the name of the command to run"},
		{context: "eval", run: `eval "echo @@"`, refused: "eval runs its arguments as shell code"},
		{context: "sh -c script", run: `sh -c "echo @@"`, refused: "sh -c runs this argument as shell code"},
		{context: "sh -c argument after the script", run: `sh -c 'printf "|%s|" "$1"' sh @@`, out: "|V|"},
		{context: "interpreter code", run: `python3 -c "print('@@')"`, refused: "python3 -c runs this argument as Python code"},
		{context: "trap action", run: `trap "echo @@" EXIT`, refused: "trap runs its action as shell code"},
		{context: "sourced file", run: `source @@`, refused: "source runs the file this word names"},
		{context: "unparsable script", run: `echo @@ $(`, refused: "the script does not parse as shell"},
	}
	for _, tt := range tests {
		t.Run(tt.context, func(t *testing.T) {
			got := refusedAt(t, tt.run)
			switch {
			case tt.refused != "":
				if !strings.Contains(got, tt.refused) {
					t.Fatalf("script %q\ngot  %q\nwant …%s…", tt.run, got, tt.refused)
				}
				return
			case got != "":
				t.Fatalf("script %q refused: %s", tt.run, got)
			}
			s := prepare(t, strings.ReplaceAll(tt.run, "@@", "${{ vars.v }}"))
			for _, shell := range []string{"dash", "bash"} {
				if tt.bash && shell == "dash" {
					continue
				}
				testtool.LookPath(t, shell, "Debian's "+shell+" package")
				if tt.arith {
					runContext(t, shell, s, "41", tt.out)
					if _, err := render(s, hostile); err == nil || !strings.Contains(err.Error(), "only a plain integer is safe") {
						t.Errorf("%s: a value that is code was handed to arithmetic (%v)", shell, err)
					}
					continue
				}
				runContext(t, shell, s, hostile, strings.ReplaceAll(tt.out, "V", hostile))
			}
		})
	}
}

// runContext runs s with the value v through shell and checks what it
// prints, and that nothing in the value ran.
func runContext(t *testing.T, shell string, s *Script, v, want string) {
	t.Helper()
	cmd, err := render(s, v)
	if err != nil {
		t.Fatal(err)
	}
	defer cmd.Close()
	dir := t.TempDir()
	x := exec.Command(shell, "-c", cmd.Script)
	x.Dir = dir
	x.Env = append(os.Environ(), append(cmd.Env, "MATCH="+v)...)
	out, err := x.CombinedOutput()
	if err != nil || string(out) != want {
		t.Errorf("%s: got %q (%v), want %q", shell, out, err, want)
	}
	if _, err := os.Stat(dir + "/PWNED"); err == nil {
		t.Errorf("%s: the value ran a command", shell)
	}
}

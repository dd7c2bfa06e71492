package shellsafe

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// hostile values: each must reach the command as exactly these bytes.
var hostileValues = []string{
	`$(touch PWNED)`,
	"`touch PWNED`",
	`'; touch PWNED #`,
	`"; touch PWNED #`,
	`\`, `\\`, `\"`, `\'`, `\$HOME`,
	"two\nlines",
	"EOF",
	"x\nEOF\ntouch PWNED\ncat <<EOF",
	"-n", "-e", "--help", "-",
	"*", "~", "~root", "?", "[a]", "{a,b}",
	"$HOME", "${HOME}", "$((1+1))", "a[$(touch PWNED)]",
	"", " ", "  lead and trail  ", "\t",
	"it's", `"quoted"`, "$'x'", "!", "!!", "#", ";", "&", "|", ">PWNED", "<(x)",
	"ünïcödé ✓", "\x01\x1b[31m",
	strings.Repeat("long ", 10000),        // 50 KB: past the env share for one value, goes by file
	strings.Repeat("y", 200_000) + "\n\n", // over MAX_ARG_STRLEN, trailing newlines kept
}

// shellContexts place ${{ vars.v }} in every shell context; each script
// prints the value between | marks.
var shellContexts = []struct{ name, src string }{
	{"bare word", `printf '|%s|' ${{ vars.v }}`},
	{"part of a word", `printf '|%s|' a${{ vars.v }}b`},
	{"double quotes", `printf '|%s|' "${{ vars.v }}"`},
	{"double quotes with text", `printf '|%s|' "a${{ vars.v }}b"`},
	{"single quotes", `printf '|%s|' '${{ vars.v }}'`},
	{"single quotes with text", `printf '|%s|' 'a${{ vars.v }}b'`},
	{"ANSI-C quotes", `printf '|%s|' $'a${{ vars.v }}b'`},
	{"assignment", `x=${{ vars.v }}; printf '|%s|' "$x"`},
	{"assignment in quotes", `x="${{ vars.v }}"; printf '|%s|' "$x"`},
	{"unquoted heredoc", "cat <<EOF\n|${{ vars.v }}|\nEOF"},
	{"unquoted heredoc, tabs stripped", "cat <<-EOF\n\t|${{ vars.v }}|\n\tEOF"},
	{"heredoc with quotes in the body", "cat <<EOF\n'|${{ vars.v }}|'\nEOF"},
	{"command substitution", `printf '|%s|' "$(printf '%s' ${{ vars.v }})"`},
	{"command substitution in quotes", `printf '|%s|' "$(printf '%s' "${{ vars.v }}")"`},
	{"backticks", "x=`printf '%s' ${{ vars.v }}`; printf '|%s|' \"$x\""},
	{"backticks in double quotes", "printf '|%s|' \"`printf '%s' ${{ vars.v }}`\""},
	{"substitution in a heredoc", "cat <<EOF\n|$(printf '%s' ${{ vars.v }})|\nEOF"},
	{"backticks in a heredoc", "cat <<EOF\n|`printf '%s' ${{ vars.v }}`|\nEOF"},
	{"nested substitutions", `printf '|%s|' "$(printf '%s' "$(printf '%s' ${{ vars.v }})")"`},
	{"parameter default", `printf '|%s|' ${unset_var:-${{ vars.v }}}`},
	{"parameter default in quotes", `printf '|%s|' "${unset_var:-${{ vars.v }}}"`},
	{"case pattern", `case "$MATCH" in ${{ vars.v }}) printf '|%s|' "$MATCH";; *) printf 'no match';; esac`},
	{"case pattern quoted", `case "$MATCH" in "${{ vars.v }}") printf '|%s|' "$MATCH";; *) printf 'no match';; esac`},
	{"for list", `for x in ${{ vars.v }}; do printf '|%s|' "$x"; done`},
	{"redirection target", `printf '%s' x > ${{ vars.v }}; cat -- ${{ vars.v }} >/dev/null; printf '|%s|' ${{ vars.v }}`},
	{"comment", "# ${{ vars.v }}\nprintf '|%s|' ${{ vars.v }}"},
	{"two in one word", `printf '|%s|' ${{ vars.v }}${{ vars.v }}`},
	// the data places beside the places refused as code
	{"argument after sh -c's script", `sh -c 'printf "|%s|" "$1"' sh ${{ vars.v }}`},
	{"argument after sh -c -- script", `sh -c -- 'printf "|%s|" "$1"' sh "${{ vars.v }}"`},
	{"env assignment for sh -c", `env X=${{ vars.v }} sh -c 'printf "|%s|" "$X"'`},
	{"exported assignment, read by sh -c", `export X="${{ vars.v }}"; sh -c 'printf "|%s|" "$X"'`},
	{"assignment default", `: "${x:=${{ vars.v }}}"; printf '|%s|' "$x"`},
	{"piped to a program reading data", `printf '|%s|' "${{ vars.v }}" | cat`},
	{"heredoc inside $( )", "x=$(cat <<EOF\n|${{ vars.v }}|\nEOF\n); printf '%s' \"$x\""},
	{"heredoc to a program reading data, in a pipe", "cat <<EOF | cat\n|${{ vars.v }}|\nEOF"},
	{"[[ == ]] (bash)", `[[ "$MATCH" == ${{ vars.v }} ]] && printf '|%s|' "$MATCH"`},
	{"here-string (bash)", `cat <<< "|${{ vars.v }}|"`},
}

// Model output reaches a command as data in every shell context, through a
// real sh and a real bash: the command receives the exact bytes, and
// nothing in the value runs.
func TestShellValuesArriveExactly(t *testing.T) {
	for _, shell := range []string{"dash", "bash"} {
		testtool.LookPath(t, shell, "Debian's "+shell+" package; .ci/install has it")
		for _, c := range shellContexts {
			tpl := prepare(t, c.src)
			for _, v := range hostileValues {
				if skipValue(shell, c.name, v) {
					continue
				}
				runShellCase(t, shell, c.name, tpl, v, arrives(c.name, v))
			}
		}
	}
}

// arrives is what the script of context ctx prints for value v.
func arrives(ctx, v string) string {
	want := "|" + v + "|"
	switch {
	case ctx == "two in one word":
		want = "|" + v + v + "|"
	case strings.Contains(ctx, "with text"), ctx == "part of a word", ctx == "ANSI-C quotes":
		want = "|a" + v + "b|"
	case ctx == "heredoc with quotes in the body":
		want = "'|" + v + "|'\n"
	case ctx == "heredoc inside $( )":
	case strings.Contains(ctx, "heredoc"), strings.Contains(ctx, "here-string"):
		want = "|" + v + "|\n"
	}
	if strings.Contains(ctx, "substitution") || strings.HasPrefix(ctx, "backticks") {
		want = strings.Replace(want, v, strings.TrimRight(v, "\n"), 1) // $( ) drops trailing newlines
	}
	return want
}

// skipValue reports the values a context cannot be tried with.
func skipValue(shell, ctx, v string) bool {
	switch {
	case strings.HasPrefix(ctx, "case") && len(v) > 100_000:
		return true // the test hands the value over in the environment too
	case (ctx == "ANSI-C quotes" || strings.Contains(ctx, "(bash)")) && shell == "dash":
		return true // dash has no $'…', [[ ]] or <<<
	case (strings.Contains(ctx, "sh -c") || strings.HasPrefix(ctx, "[[")) && len(v) > 100_000:
		return true // Linux refuses an argument or environment string over 128 KiB
	case ctx == "redirection target" && (v == "" || strings.ContainsAny(v, "/") || len(v) > 200 || v == "-"):
		return true // not a file name
	}
	return false
}

func runShellCase(t *testing.T, shell, ctx string, tpl *Script, v, want string) {
	t.Helper()
	cmd, err := render(tpl, v)
	if err != nil {
		t.Fatalf("%s: %v", ctx, err)
	}
	defer cmd.Close()
	dir := t.TempDir()
	x := exec.Command(shell, "-c", cmd.Script)
	x.Dir = dir
	x.Env = append(os.Environ(), cmd.Env...)
	if strings.HasPrefix(ctx, "case") || strings.HasPrefix(ctx, "[[") {
		x.Env = append(x.Env, "MATCH="+v)
	}
	out, err := x.CombinedOutput()
	if err != nil {
		t.Errorf("%s, %s, value %.40q: %v: %.200s", shell, ctx, v, err, out)
		return
	}
	if string(out) != want {
		t.Errorf("%s, %s: value %.60q arrived as %.60q", shell, ctx, v, out)
	}
	if _, err := os.Stat(dir + "/PWNED"); err == nil {
		t.Errorf("%s, %s: value %.60q ran a command", shell, ctx, v)
	}
}

// Arithmetic evaluates a variable's content as an expression (bash runs
// a[$(cmd)]), so there a value must be a plain integer.
func TestShellArithmeticTakesOnlyIntegers(t *testing.T) {
	scripts := []string{
		`echo $(( ${{ vars.v }} + 1 ))`,
		`echo "$(( ${{ vars.v }} + 1 ))"`,
		`x=$(( 1 + ${{ vars.v }} )); echo $((x))`,
		`(( y = ${{ vars.v }} + 1 )); echo $y`,
		`let "y = ${{ vars.v }} + 1"; echo $y`,
		`[[ ${{ vars.v }} -eq 41 ]] && echo 42`,
		`a=(0 1 2); echo $(( ${a[${{ vars.v }}-41]} + 42 ))`,
		`s=abcdef; echo ${s:${{ vars.v }}-41:0}42`,
		`a[${{ vars.v }}]=42; echo ${a[41]}`,
		`declare -i n=${{ vars.v }}; echo $((n+1))`,
	}
	for _, src := range scripts {
		tpl := prepare(t, src)
		for _, sl := range tpl.slots {
			if !sl.arith {
				t.Errorf("%s: not seen as arithmetic", src)
			}
		}
		cmd, err := render(tpl, "41")
		if err != nil {
			t.Fatal(err)
		}
		x := exec.Command("bash", "-c", cmd.Script)
		x.Env = append(os.Environ(), cmd.Env...)
		if out, err := x.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "42" {
			t.Errorf("%s with 41: %q %v", src, out, err)
		}
		for _, bad := range []string{"a[$(touch PWNED)]", "1+1", "x", "", " 1", "0x10", "99999999999999999999"} {
			if _, err := render(tpl, bad); err == nil || !strings.Contains(err.Error(), "plain integer") {
				t.Errorf("%s: value %q accepted in arithmetic (%v)", src, bad, err)
			}
		}
	}
}

// A value given to a program as an argument, not inside its code, is fine.
func TestShellValueAsArgumentToInterpreters(t *testing.T) {
	for _, src := range []string{
		`sh -c 'printf "|%s|" "$1"' sh ${{ vars.v }}`,
		`bash -c 'printf "|%s|" "$1"' bash "${{ vars.v }}"`,
	} {
		tpl := prepare(t, src)
		for _, v := range hostileValues[:12] {
			runShellCase(t, "sh", src, tpl, v, "|"+v+"|")
		}
	}
}

// Without ${{ }}, the script is run as written (and not parsed).
func TestShellScriptWithoutValues(t *testing.T) {
	tpl := prepare(t, "echo $(( 1 + 1 )) 'a'")
	if tpl.text != "echo $(( 1 + 1 )) 'a'" {
		t.Errorf("script changed: %q", tpl.text)
	}
}

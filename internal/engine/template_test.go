package engine

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/plans"
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
	// the data places left around the code places refused
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

func compileShell(t *testing.T, src string, scope *Scope) *Template {
	t.Helper()
	tpl, errs := compileTemplate(src, scope)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	sp, serrs := planShell(tpl)
	if len(serrs) > 0 {
		t.Fatalf("%q: %v", src, serrs)
	}
	tpl.shell = sp
	return tpl
}

// Model output reaches a command as data in every shell context, through a
// real sh and a real bash: the command receives the exact bytes, and
// nothing in the value runs.
func TestShellValuesArriveExactly(t *testing.T) {
	scope := newScope(types.Map{"vars": types.Map{"v": types.String}})
	for _, shell := range []string{"dash", "bash"} {
		testtool.LookPath(t, shell, "Debian's "+shell+" package; .ci/install has it")
		for _, c := range shellContexts {
			tpl := compileShell(t, c.src, scope)
			for _, v := range hostileValues {
				want := "|" + v + "|"
				switch {
				case c.name == "two in one word":
					want = "|" + v + v + "|"
				case strings.Contains(c.name, "with text"), c.name == "part of a word", c.name == "ANSI-C quotes":
					want = "|a" + v + "b|"
				case c.name == "heredoc with quotes in the body":
					want = "'|" + v + "|'\n"
				case c.name == "heredoc inside $( )":
				case strings.Contains(c.name, "heredoc"), strings.Contains(c.name, "here-string"):
					want = "|" + v + "|\n"
				}
				if strings.Contains(c.name, "substitution") || strings.HasPrefix(c.name, "backticks") {
					want = strings.Replace(want, v, strings.TrimRight(v, "\n"), 1) // $( ) drops trailing newlines
				}
				if strings.HasPrefix(c.name, "case") && len(v) > 100_000 {
					continue // the test hands the value over in the environment too
				}
				if (c.name == "ANSI-C quotes" || strings.Contains(c.name, "(bash)")) && shell == "dash" {
					continue // dash has no $'…', [[ ]] or <<<
				}
				if (strings.Contains(c.name, "sh -c") || strings.HasPrefix(c.name, "[[")) && len(v) > 100_000 {
					continue // Linux refuses an argument or environment string over 128 KiB
				}
				if c.name == "redirection target" && (v == "" || strings.ContainsAny(v, "/") || len(v) > 200 || v == "-") {
					continue // not a file name
				}
				runShellCase(t, shell, c.name, tpl, v, want)
			}
		}
	}
}

func runShellCase(t *testing.T, shell, ctx string, tpl *Template, v, want string) {
	t.Helper()
	cmd, err := tpl.renderShell(map[string]any{"vars": map[string]any{"v": v}})
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
	scope := newScope(types.Map{"vars": types.Map{"v": types.String}})
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
		tpl := compileShell(t, src, scope)
		for _, sl := range tpl.shell.slots {
			if !sl.arith {
				t.Errorf("%s: not seen as arithmetic", src)
			}
		}
		cmd, err := tpl.renderShell(map[string]any{"vars": map[string]any{"v": "41"}})
		if err != nil {
			t.Fatal(err)
		}
		x := exec.Command("bash", "-c", cmd.Script)
		x.Env = append(os.Environ(), cmd.Env...)
		if out, err := x.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "42" {
			t.Errorf("%s with 41: %q %v", src, out, err)
		}
		for _, bad := range []string{"a[$(touch PWNED)]", "1+1", "x", "", " 1", "0x10", "99999999999999999999"} {
			if _, err := tpl.renderShell(map[string]any{"vars": map[string]any{"v": bad}}); err == nil || !strings.Contains(err.Error(), "plain integer") {
				t.Errorf("%s: value %q accepted in arithmetic (%v)", src, bad, err)
			}
		}
	}
}

// Places that cannot take a value safely are refused when the plan loads,
// at the ${{ }}'s line and column.
func TestShellRefusedPlaces(t *testing.T) {
	tests := []struct{ name, run, want string }{
		{"quoted heredoc", "cat <<'EOF'\n${{ vars.v }}\nEOF", "7:7: run: a quoted heredoc"},
		{"double-quoted heredoc", "cat <<\"EOF\"\nx ${{ vars.v }}\nEOF", "7:9: run: a quoted heredoc"},
		{"escaped heredoc delimiter", "cat <<\\EOF\n${{ vars.v }}\nEOF", "7:7: run: a quoted heredoc"},
		{"heredoc delimiter", "cat <<${{ vars.v }}\nx\n", "6:13: run: the script does not parse as shell"},
		{"variable name", "echo $${{ vars.v }}", "6:13: run: a ${{ }} cannot be a variable's name"},
		{"assignment name", "${{ vars.v }}=1", "6:7: run: a ${{ }} cannot be a name here (an assignment's variable)"},
		{"for variable", "for ${{ vars.v }} in a; do :; done", "6:11: run: a ${{ }} cannot be a name here (a for loop's variable)"},
		{"eval", "eval \"echo ${{ vars.v }}\"", "6:18: run: eval runs its arguments as shell code"},
		{"sh -c", "sh -c \"echo ${{ vars.v }}\"", "6:19: run: sh -c runs this argument as shell code"},
		{"bash -c in xargs", "echo x | xargs bash -ec 'echo ${{ vars.v }}'", "6:37: run: bash -ec runs this argument as shell code"},
		{"alias", "alias x=\"echo ${{ vars.v }}\"", "6:21: run: alias defines shell code"},
		{"su -c", "su -c \"echo ${{ vars.v }}\" nobody", "6:19: run: su runs its -c argument as shell code"},
		{"python -c", "python3 -c \"print('${{ vars.v }}')\"", "6:26: run: python3 -c runs this argument as Python code"},
		{"perl -e", "perl -ne 'print \"${{ vars.v }}\"'", "6:24: run: perl -ne runs this argument as Perl code"},
		{"declare -n", "declare -n r=${{ vars.v }}", "6:20: run: declare -n makes a variable refer"},
		{"trap", "trap \"echo ${{ vars.v }}\" EXIT", "6:18: run: trap runs its action as shell code"},
		{"unset", "unset ${{ vars.v }}", "6:13: run: unset takes variable names"},
		{"read", "read -r ${{ vars.v }} </dev/null", "6:15: run: read takes variable names"},
		{"printf -v", "printf -v ${{ vars.v }} %s x", "6:17: run: printf -v takes a variable name"},
		{"[[ -v ]]", "[[ -v ${{ vars.v }} ]]", "6:13: run: `-v` takes a variable name"},
		{"after a backslash", "echo \\${{ vars.v }}", "6:13: run: a ${{ }} right after a backslash"},
		{"unparsable script", "echo ${{ vars.v }} $(", "6:12: run: the script does not parse as shell"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\nvars: {v: x}\nsteps:\n  - label: c\n    run: |\n      " + strings.ReplaceAll(tt.run, "\n", "\n      ") + "\n"
			p, _ := plans.Parse("p.yaml", []byte(src))
			r := &plans.Reporter{File: "p.yaml"}
			d := newDecoder(p, p.Steps[0], r, newScope(scopeType(p, NewRegistry())))
			if tpl := d.ShellTemplate("run"); tpl != nil {
				t.Fatalf("accepted: %s", tpl.shell.script)
			}
			got := r.List.Error()
			if !strings.Contains(got, "p.yaml:"+tt.want) {
				t.Errorf("got  %s\nwant p.yaml:%s…", got, tt.want)
			}
		})
	}
}

// A value given to a program as an argument, not inside its code, is fine.
func TestShellValueAsArgumentToInterpreters(t *testing.T) {
	scope := newScope(types.Map{"vars": types.Map{"v": types.String}})
	for _, src := range []string{
		`sh -c 'printf "|%s|" "$1"' sh ${{ vars.v }}`,
		`bash -c 'printf "|%s|" "$1"' bash "${{ vars.v }}"`,
	} {
		tpl := compileShell(t, src, scope)
		for _, v := range hostileValues[:12] {
			runShellCase(t, "sh", src, tpl, v, "|"+v+"|")
		}
	}
}

// Without ${{ }}, the script is run as written (and not parsed).
func TestShellScriptWithoutValues(t *testing.T) {
	tpl := compileShell(t, "echo $(( 1 + 1 )) 'a'", newScope(types.Map{}))
	if tpl.shell.script != "echo $(( 1 + 1 )) 'a'" {
		t.Errorf("script changed: %q", tpl.shell.script)
	}
}

package engine

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/engine/shellsafe"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

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
			d := newDecoder(p, p.Steps[0], r, planScope(p, NewRegistry(), nil))
			if tpl := d.ShellTemplate("run"); tpl != nil {
				t.Fatalf("accepted: %s", tpl.shell.Text())
			}
			got := r.List.Error()
			if !strings.Contains(got, "p.yaml:"+tt.want) {
				t.Errorf("got  %s\nwant p.yaml:%s…", got, tt.want)
			}
		})
	}
}

// A shell template compiled by the decoder renders its ${{ }} values
// through the environment: the script run by a real sh receives each
// value's exact bytes, and a value refused at run time is reported with
// the expression that gave it.
func TestShellTemplateRenders(t *testing.T) {
	sh := testtool.LookPath(t, "sh", "a POSIX shell")
	scope := newScope(types.Map{"vars": types.Map{"v": types.String, "n": types.String}})
	tests := []struct {
		name, src string
		v, n      string
		want      string // output, or the error's text
		fails     bool
	}{
		{"value as data", `printf '|%s|' ${{ vars.v }}`, `$(touch PWNED)'"`, "", `|$(touch PWNED)'"|`, false},
		{"two values", `printf '|%s|%s|' "${{ vars.v }}" '${{ vars.n }}'`, "a b", "c", "|a b|c|", false},
		{"integer in arithmetic", `echo $(( ${{ vars.n }} + 1 ))`, "", "41", "42\n", false},
		{"code in arithmetic", `echo $(( ${{ vars.n }} + 1 ))`, "", "a[$(touch PWNED)]", "${{ vars.n }} stands in shell arithmetic, where only a plain integer is safe", true},
		{"NUL byte", `printf %s ${{ vars.v }}`, "a\x00b", "", "${{ vars.v }}: the value holds a NUL byte", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tpl, errs := compileTemplate(tt.src, scope)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			sp, serrs := shellsafe.Prepare(tpl.shellSegments())
			if len(serrs) > 0 {
				t.Fatal(serrs)
			}
			tpl.shell = sp
			cmd, err := tpl.renderShell(map[string]any{"vars": map[string]any{"v": tt.v, "n": tt.n}})
			if tt.fails {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want …%s…", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cmd.Close()
			dir := t.TempDir()
			x := exec.Command(sh, "-c", cmd.Script)
			x.Dir = dir
			x.Env = append(os.Environ(), cmd.Env...)
			out, err := x.CombinedOutput()
			if err != nil || string(out) != tt.want {
				t.Errorf("got %q (%v), want %q", out, err, tt.want)
			}
			if _, err := os.Stat(dir + "/PWNED"); err == nil {
				t.Errorf("the value ran a command")
			}
		})
	}
}

package engine

import (
	"os/exec"
	"testing"

	"github.com/expr-lang/expr/types"
)

// A value inserted into a shell script reaches the command as literal
// text, wherever the ${{ }} stands: bare, inside "…" or inside '…'.
func TestRenderShellKeepsValuesLiteral(t *testing.T) {
	values := []string{
		`'; rm -rf ~ #`,
		`$(touch /tmp/pwned) "quoted" \back\slash ` + "`tick`",
		"two\nlines",
		"",
		`it's`,
		`*`,
	}
	scripts := []struct {
		name, src string
	}{
		{"bare", `printf '%s|' ${{ vars.v }}`},
		{"double", `printf '%s|' "${{ vars.v }}"`},
		{"single", `printf '%s|' '${{ vars.v }}'`},
		{"mixed", `printf '%s|' "a ${{ vars.v }}" '${{ vars.v }}' ${{ vars.v }}`},
	}
	scope := newScope(types.Map{"vars": types.Map{"v": types.String}})
	for _, sc := range scripts {
		tpl, errs := compileTemplate(sc.src, scope)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for _, v := range values {
			script, err := tpl.RenderShell(map[string]any{"vars": map[string]any{"v": v}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("sh", "-c", script).Output()
			if err != nil {
				t.Fatalf("%s %q: %v (script %s)", sc.name, v, err, script)
			}
			want := v + "|"
			if sc.name == "mixed" {
				want = "a " + v + "|" + v + "|" + v + "|"
			}
			if string(out) != want {
				t.Errorf("%s: value %q arrived as %q (script %s)", sc.name, v, out, script)
			}
		}
	}
}

package engine

import (
	"testing"

	"github.com/expr-lang/expr/types"
	"github.com/planrunner/runner/internal/engine/shellsafe"
)

// shellBenchScript is a command step's script with the usual kinds of
// places, compiled as a plan's `run:` is (Decoder.ShellTemplate).
const shellBenchScript = `set -e
cd ${{ vars.dir }}
git commit -m "${{ vars.msg }}"
cat <<EOF > notes.txt
${{ vars.notes }}
EOF
python3 script.py --name ${{ vars.name }} | jq --arg x "${{ vars.x }}" '.a = $x'
for f in ${{ vars.files }}; do echo "$f"; done
echo $(( ${{ vars.n }} + 1 ))
`

// A shell script is prepared once per shell field when a plan loads.
func BenchmarkShellPrepare(b *testing.B) {
	tpl, _ := compileTemplate(shellBenchScript, newScope(types.Map{"vars": types.Map{"dir": types.String, "msg": types.String, "notes": types.String, "name": types.String, "x": types.String, "files": types.String, "n": types.String}}))
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := shellsafe.Prepare(tpl.shellSegments()); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// A shell command is rendered once per visit of a command step.
func BenchmarkShellCommand(b *testing.B) {
	tpl, _ := compileTemplate(shellBenchScript, newScope(types.Map{"vars": types.Map{"dir": types.String, "msg": types.String, "notes": types.String, "name": types.String, "x": types.String, "files": types.String, "n": types.String}}))
	sp, errs := shellsafe.Prepare(tpl.shellSegments())
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	tpl.shell = sp
	env := map[string]any{"vars": map[string]any{"dir": "42", "msg": "42", "notes": "42", "name": "42", "x": "42", "files": "42", "n": "42"}}
	b.ReportAllocs()
	for b.Loop() {
		c, err := tpl.renderShell(env)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

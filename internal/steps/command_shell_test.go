package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// A model's answer reaches command and test steps as data, end to end: the
// script agent answers with text that would end a heredoc and run
// commands, and the steps receive exactly its bytes.
func TestModelOutputIsDataInScripts(t *testing.T) {
	answer := "EOF\ntouch PWNED\n$(touch PWNED) `touch PWNED` '\"\\"
	src := `version: 1
agents:
  bot: {provider: script, responses: [` + yamlQuote(answer) + `]}
steps:
  - {label: gen, type: llm, agent: bot, prompt: go}
  - label: heredoc
    type: command
    run: |
      cat > got.txt <<EOF
      ${{ steps.gen.output }}
      EOF
  - label: quoted
    type: command
    run: printf '%s' "${{ steps.gen.output }}" > got2.txt; printf '%s' '${{ steps.gen.output }}' > got3.txt
  - label: suite
    type: test
    framework: generic
    command: printf '%s' ${{ steps.gen.output }} > got4.txt
`
	dir := t.TempDir()
	b, err := runPlan(t, dir, src, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"got.txt": answer + "\n", "got2.txt": answer, "got3.txt": answer, "got4.txt": answer}
	for f, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || string(got) != w {
			t.Errorf("%s: %q (%v), want %q", f, got, err, w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("the answer ran a command")
	}
	_ = b
}

// A ${{ }} where no value can stand safely is a load error at its line.
func TestScriptPlacesRefusedAtLoad(t *testing.T) {
	got := llmCompileErr(t, "version: 1\nsteps:\n  - label: c\n    type: command\n    run: |\n      cat <<'EOF'\n      ${{ steps.c.visits }}\n      EOF\n")
	if !strings.Contains(got, "plan.yaml:7:7: run: a quoted heredoc") {
		t.Errorf("got %s", got)
	}
}

func yamlQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// A test step's command: is judged like a command step's run:
// the code after bash -c, wherever -c stands among the options, a heredoc
// fed to an interpreter and for (( )) arithmetic are refused or checked.
func TestTestCommandCodePlacesRefused(t *testing.T) {
	for _, tt := range []struct{ command, want string }{
		{`bash -c -- "echo ${{ steps.c.visits }}"`, "plan.yaml:6:31: command: bash -c runs this argument as shell code"},
		{`bash -c -e "go test -run ${{ steps.c.visits }}"`, "plan.yaml:6:39: command: bash -c runs this argument as shell code"},
		{`sh -xc "go test -run ${{ steps.c.visits }}"`, "plan.yaml:6:35: command: sh -xc runs this argument as shell code"},
		{`python3 -Bc "print(${{ steps.c.visits }})"`, "plan.yaml:6:33: command: python3 -Bc runs this argument as Python code"},
		{"|\n      bash <<EOF\n      go test -run ${{ steps.c.visits }}\n      EOF", "plan.yaml:8:20: command: this input goes to a command that reads it as code: bash reads its program from its input"},
	} {
		got := llmCompileErr(t, "version: 1\nsteps:\n  - label: c\n    type: test\n    framework: generic\n    command: "+tt.command+"\n")
		if !strings.Contains(got, tt.want) {
			t.Errorf("command: %s\ngot  %s\nwant %s…", tt.command, got, tt.want)
		}
	}
}

// A test step's command may still take a value as an argument.
func TestTestCommandValueAsArgument(t *testing.T) {
	src := `version: 1
vars: {pattern: "Test$(touch PWNED)"}
steps:
  - label: suite
    type: test
    framework: generic
    command: bash -c 'printf "%s" "$1" > got.txt' bash ${{ vars.pattern }}
`
	dir := t.TempDir()
	if _, err := runPlan(t, dir, src, nil, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "got.txt"))
	if err != nil || string(got) != "Test$(touch PWNED)" {
		t.Errorf("got %q (%v)", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("the value ran a command")
	}
}

// What cannot work is found by validate, before the paid steps before it:
// a script that does not parse, and a condition on a text output.
func TestLoadFindsBrokenScriptsAndConditions(t *testing.T) {
	for _, tt := range []struct{ steps, want string }{
		{`{label: c, type: command, run: "echo $(( 1 + )"}`, "plan.yaml:3:48: run: the script does not parse as shell (line 1: `+` must be followed by an expression)"},
		{`{label: c, type: test, framework: generic, command: "go test ./... \"unterminated"}`, "command: the script does not parse as shell (line 1: reached EOF without closing quote"},
		{"{label: c, type: command, run: \"true\"}\n  - {label: d, if: steps.c.output, type: command, run: \"true\"}", "plan.yaml:4:20: if: expected bool, but got string"},
		{"{label: c, type: test, framework: generic, command: \"true\"}\n  - {label: d, type: branch, cases: [{when: steps.c.output, goto: c}]}", "when: expected bool, but got string"},
	} {
		got := llmCompileErr(t, "version: 1\nsteps:\n  - "+tt.steps+"\n")
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s\ngot  %s\nwant %s…", tt.steps, got, tt.want)
		}
	}
	// A text output compared, or a command's output taken apart, still loads.
	if _, err := engine.Compile("plan.yaml", []byte("version: 1\nsteps:\n  - {label: c, type: command, run: \"echo ok\"}\n  - {label: d, if: 'steps.c.output == \"ok\" && len(split(steps.c.output, \"\\n\")) > 0', type: command, run: \"true\"}\n"), Registry()); err != nil {
		t.Errorf("a comparison on a text output: %v", err)
	}
}

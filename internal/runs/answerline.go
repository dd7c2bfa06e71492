package runs

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/steps"
)

// AnswerCommand is the shell line that answers a waiting input, with an
// example answer made from its form: what the CLI prints when a run
// stops to wait, and what the report shows for a waiting input, so the
// two never say different things. quotedPath names the run (already
// shell-quoted: a path, a run id, latest).
func AnswerCommand(quotedPath string, w board.WaitingInput) string {
	example := "{}"
	if form, err := steps.ParseForm(w.Form); err == nil {
		var b strings.Builder
		b.WriteByte('{')
		for i, f := range form.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			var v any
			switch {
			case len(f.Enum) > 0:
				v = f.Enum[0]
			case f.Type == "boolean":
				v = true
			case f.Type == "number" || f.Type == "integer":
				v = 0
			default:
				v = "..."
			}
			fmt.Fprintf(&b, "%s: %s", jsonText(f.Name), jsonText(v))
		}
		b.WriteByte('}')
		example = b.String()
	}
	return fmt.Sprintf("runner answer %s --step %s --json %s", quotedPath, steps.VisitName(w.Label, w.Visit), engine.ShellQuote(example))
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

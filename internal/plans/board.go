package plans

import (
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// BoardOptions are the plan's top-level `board:` settings.
type BoardOptions struct {
	// Markdown is a file (relative to the workdir) kept current during the
	// run with the board as the markdown document of docs/live-board.md.
	Markdown string
}

func parseBoardOptions(r *Reporter, n *yaml.Node) BoardOptions {
	var o BoardOptions
	for _, f := range Fields(r, n, "board") {
		switch f.Key {
		case "markdown":
			s, ok := String(r, f.Value, "board.markdown")
			if ok && (strings.TrimSpace(s) == "" || filepath.Clean(s) == ".") {
				r.At(f.Value, "board.markdown must name a file, e.g. swarm-blackboard.md")
			}
			o.Markdown = s
		default:
			Unknown(r, f, "board", []string{"markdown"})
		}
	}
	return o
}

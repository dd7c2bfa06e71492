package plans

import (
	"strings"
	"testing"
)

func TestBoardOptions(t *testing.T) {
	tests := []struct {
		src, md, err string
	}{
		{"board: {markdown: swarm-blackboard.md}", "swarm-blackboard.md", ""},
		{"board: {markdown: ''}", "", "board.markdown must name a file"},
		{"board: {markdwn: x.md}", "", `unknown field "markdwn" in board`},
	}
	for _, tt := range tests {
		p, err := Parse("p.yaml", []byte("version: 1\n"+tt.src+"\nsteps: [{label: a, type: command, run: x}]\n"))
		if tt.err == "" && (err != nil || p.Board.Markdown != tt.md) {
			t.Errorf("%s: %+v %v", tt.src, p.Board, err)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: err %v, want %q", tt.src, err, tt.err)
		}
	}
}

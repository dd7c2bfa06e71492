package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/eval"
)

const evalUsage = "eval RUN... [--baseline GOLDEN] [--json]"

func cmdEval(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("eval", stdout, stderr)
	baseline := fs.String("baseline", "", "GOLDEN: compare RUN with this run step by step; exit 1 when something that passed there does not now")
	asJSON := fs.Bool("json", false, "print the verdict (or the figures) as JSON on stdout, for CI")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) == 0 {
		return usageErr(stderr, fs, "want a run to evaluate (a blackboard.json, a run directory or a run id)")
	}
	if *baseline != "" && len(pos) != 1 {
		return usageErr(stderr, fs, "--baseline compares one run, got %d", len(pos))
	}
	load := func(arg string) (*board.Board, bool) {
		path, err := runs.Resolve(arg, ".")
		if err == nil {
			var b *board.Board
			if b, err = board.Load(path); err == nil {
				return b, true
			}
		}
		fmt.Fprintf(stderr, "runner eval: %s: %v\n", arg, err)
		return nil, false
	}
	out, flush := buffered(stdout)
	defer flush()
	if *baseline != "" {
		golden, ok := load(*baseline)
		if !ok {
			return exitUsage
		}
		run, ok := load(pos[0])
		if !ok {
			return exitUsage
		}
		c := eval.Compare(run, golden, steps.Registry())
		if *asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			enc.Encode(c)
		} else {
			c.Table(out)
		}
		if c.Verdict == "regressed" {
			return exitFailed
		}
		return exitOK
	}
	var boards []*board.Board
	for _, p := range pos {
		b, ok := load(p)
		if !ok {
			return exitUsage
		}
		boards = append(boards, b)
	}
	a := eval.Summarize(boards, steps.Registry())
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.Encode(a)
		return exitOK
	}
	a.Table(out)
	return exitOK
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
)

const boardUsage = "board FILE list | get KEY | put KEY VALUE [--ttl D] | delete KEY | snapshot | show [--format md|json]"

func cmdBoard(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("board", stderr)
	ttl := fs.Duration("ttl", 0, "put: the value expires after this long")
	format := fs.String("format", "md", "show: md or json")
	force := fs.Bool("force", false, "put/delete: change a run that is marked running (only if no process is writing it)")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 2 {
		return usageErr(stderr, fs, "usage: runner %s", boardUsage)
	}
	path, op, rest := pos[0], pos[1], pos[2:]
	want := map[string]int{"list": 0, "get": 1, "put": 2, "delete": 1, "snapshot": 0, "show": 0}
	n, ok := want[op]
	if !ok {
		return usageErr(stderr, fs, "unknown operation %q; usage: runner %s", op, boardUsage)
	}
	if len(rest) != n {
		return usageErr(stderr, fs, "%s takes %d argument(s), got %d", op, n, len(rest))
	}
	if op == "put" || op == "delete" {
		return boardChange(path, op, rest, *ttl, *force, stdout, stderr)
	}
	b, err := board.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitUsage
	}
	switch op {
	case "list":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVERSION\tAUTHOR\tWRITTEN\tEXPIRES")
		for _, k := range b.Keys("") {
			exp := "-"
			if k.TTL != nil {
				exp = k.TS.Add(time.Duration(*k.TTL * float64(time.Second))).Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", k.Key, k.Version, k.Author, k.TS.Format(time.RFC3339), exp)
		}
		tw.Flush()
	case "get":
		e, ok := b.Get(rest[0])
		if !ok {
			fmt.Fprintf(stderr, "runner board: no key %q (absent, deleted or expired)\n", rest[0])
			return exitFailed
		}
		fmt.Fprintln(stdout, valueText(e.Content))
	case "snapshot":
		snap := map[string]any{}
		for _, k := range b.Keys("") {
			e, _ := b.Get(k.Key)
			snap[k.Key] = e.Content
		}
		writeJSON(stdout, snap)
	case "show":
		switch *format {
		case "json":
			writeJSON(stdout, map[string]any{"format": board.Format, "run": b.Run(), "steps": b.Steps(),
				"entries": b.Entries(), "recordings": b.Recordings()})
		case "md":
			showMarkdown(stdout, b)
		default:
			return usageErr(stderr, fs, "--format %q: want md or json", *format)
		}
	}
	return exitOK
}

// boardChange writes or deletes a key of a saved run, durably.
func boardChange(path, op string, args []string, ttl time.Duration, force bool, stdout, stderr io.Writer) int {
	saved, err := board.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitUsage
	}
	if saved.Run().Status == board.StatusRunning && !force {
		fmt.Fprintf(stderr, "runner board: run %s is marked running: a runner process may be writing it (if it was killed, resume it, or give --force)\n", saved.Run().ID)
		return exitUsage
	}
	b, err := board.Open(path, board.Options{})
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitFailed
	}
	defer b.Close()
	w := board.WriteOp{Key: args[0], TTL: ttl, Author: "cli", Role: "user", ExpectVersion: -1, Delete: op == "delete"}
	if op == "put" {
		w.Value = parseValue(args[1])
	}
	e, err := b.Write(w)
	if err == nil {
		err = b.Save()
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "%s %s (version %d)\n", map[string]string{"put": "wrote", "delete": "deleted"}[op], e.Key, e.Version)
	return exitOK
}

// parseValue reads a value given on the command line: JSON when it is
// JSON (a number, a list...), else the text as it is.
func parseValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// showMarkdown prints a saved run for a person: the run, its steps, the
// live keys and the entries by section.
func showMarkdown(w io.Writer, b *board.Board) {
	run := b.Run()
	fmt.Fprintf(w, "# Run %s: %s\n\n", run.ID, run.Status)
	fmt.Fprintf(w, "- plan: %s (sha256 %.12s)\n- workdir: %s\n- started: %s\n", run.PlanPath, run.PlanSHA256, run.Workdir, run.StartedAt.Format(time.RFC3339))
	if run.FinishedAt != nil {
		fmt.Fprintf(w, "- finished: %s (%s)\n", run.FinishedAt.Format(time.RFC3339), run.FinishedAt.Sub(run.StartedAt).Round(time.Millisecond))
	}
	if run.Error != "" {
		fmt.Fprintf(w, "- error: %s\n", firstLine(run.Error))
	}
	if len(run.Vars) > 0 {
		names := make([]string, 0, len(run.Vars))
		for k := range run.Vars {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "- var %s = %s\n", k, engine.Text(run.Vars[k]))
		}
	}
	fmt.Fprintf(w, "\n## Steps\n\n| step | visit | status | ms | output / error |\n|---|---|---|---|---|\n")
	for _, s := range b.Steps() {
		var res struct{ Output any }
		json.Unmarshal(s.Result, &res)
		text := firstLine(engine.Text(res.Output))
		if s.Error != "" {
			text = firstLine(s.Error)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %s |\n", s.Label, s.Visit, s.Status, s.DurationMS, cell(text))
	}
	if keys := b.Keys(""); len(keys) > 0 {
		fmt.Fprintf(w, "\n## Keys\n\n| key | version | author | value |\n|---|---|---|---|\n")
		for _, k := range keys {
			e, _ := b.Get(k.Key)
			fmt.Fprintf(w, "| %s | %d | %s | %s |\n", k.Key, k.Version, k.Author, cell(firstLine(engine.Text(e.Content))))
		}
	}
	bySection := map[string][]board.Entry{}
	var sections []string
	for _, e := range b.Entries() {
		if _, ok := bySection[e.Section]; !ok {
			sections = append(sections, e.Section)
		}
		bySection[e.Section] = append(bySection[e.Section], e)
	}
	for _, sec := range sections {
		fmt.Fprintf(w, "\n## Section %s\n\n", sec)
		for _, e := range bySection[sec] {
			who := e.Author
			if e.Role != "" {
				who += " (" + e.Role + ")"
			}
			fmt.Fprintf(w, "- #%d %s, step %s: %s\n", e.Seq, who, e.Label, cell(firstLine(engine.Text(e.Content))))
		}
	}
}

func firstLine(s string) string {
	line, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 120 {
		line, more = line[:120], true
	}
	if more {
		line += " …"
	}
	return line
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/memstore"
)

const memoryUsage = "memory [--dir DIR] [--store NAME] list [PREFIX] [--json] | show KEY | rm KEY"

// cmdMemory is `runner memory`: the long-term memory agents keep across
// runs (tools: [memory]), listed, shown and removed.
func cmdMemory(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("memory", stdout, stderr)
	dir := fs.String("dir", ".", "the workdir whose memory it is")
	store := fs.String("store", "", "the store's name (default: default): .runner/memory/NAME.json in the workdir")
	asJSON := fs.Bool("json", false, "list: one JSON line per entry")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 1 {
		return usageErr(stderr, fs, "usage: runner %s", memoryUsage)
	}
	op, rest := pos[0], pos[1:]
	want := map[string][2]int{"list": {0, 1}, "show": {1, 1}, "rm": {1, 1}}
	n, ok := want[op]
	switch {
	case !ok:
		return usageErr(stderr, fs, "unknown operation %q; usage: runner %s", op, memoryUsage)
	case len(rest) < n[0] || len(rest) > n[1]:
		return usageErr(stderr, fs, "%s takes %s argument(s), got %d", op, argCount(n[0], n[1]), len(rest))
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	path, err := memstore.Path(*dir, *store)
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	st := memstore.Open(path)
	fail := func(err error) int {
		fmt.Fprintf(stderr, "runner memory: %v\n", err)
		return exitFailed
	}
	switch op {
	case "list":
		es, err := st.List(optArg(rest))
		if err != nil {
			return fail(err)
		}
		if *asJSON {
			for _, e := range es {
				line, _ := json.Marshal(e)
				fmt.Fprintln(stdout, string(line))
			}
			return exitOK
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVERSION\tAGENT\tRUN\tSTEP\tWRITTEN\tEXPIRES")
		for _, e := range es {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", e.Key, e.Version, orDash(e.Agent), orDash(e.RunID), orDash(e.Label),
				e.Written.UTC().Format(time.RFC3339), orDash(e.Expires))
		}
		tw.Flush()
	case "show":
		e, found, err := st.Read(rest[0])
		if err != nil {
			return fail(err)
		}
		if !found {
			fmt.Fprintln(stdout, "null")
			return exitOK
		}
		writeJSON(stdout, e)
	case "rm":
		if err := st.Remove(rest[0], ""); err != nil {
			if errors.Is(err, board.ErrAbsent) {
				return fail(fmt.Errorf("no memory key %q", rest[0]))
			}
			return fail(err)
		}
		fmt.Fprintf(stdout, "removed %s\n", rest[0])
	}
	return exitOK
}

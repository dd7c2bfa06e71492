package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/planrunner/runner/internal/runs"
)

func cmdRuns(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("runs", stdout, stderr)
	dir := fs.String("dir", ".", "the directory whose runs to list (they are under DIR/.runner/runs)")
	asJSON := fs.Bool("json", false, "print the runs as a JSON array")
	status := fs.String("status", "", "only runs with this status: running, waiting, succeeded, failed or interrupted")
	plan := fs.String("plan", "", "only runs of plans whose path contains this")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "runs takes no arguments (got %q): use --dir for another directory", pos[0])
	}
	switch *status {
	case "", "running", "waiting", "succeeded", "failed", "interrupted":
	default:
		return usageErr(stderr, fs, "--status %q: want running, waiting, succeeded, failed or interrupted", *status)
	}
	list, err := runs.List(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "runner runs: %v\n", err)
		return exitUsage
	}
	kept := list[:0]
	for _, r := range list {
		if (*status == "" || r.Status == *status) && strings.Contains(r.Plan, *plan) {
			kept = append(kept, r)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(kept)
		return exitOK
	}
	if len(kept) == 0 {
		fmt.Fprintf(stderr, "no runs under %s\n", runs.RunsDir(*dir))
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPLAN\tSTATUS\tSTARTED\tDURATION\tSTEPS\tTOKENS\tCOST")
	now := time.Now()
	for _, r := range kept {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, orDash(r.Plan), r.StatusText(),
			r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.DurationText(now), r.StepsText(),
			r.TokensText(), r.CostText())
	}
	tw.Flush()
	return exitOK
}

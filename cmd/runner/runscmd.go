package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/runs"
)

func cmdRuns(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "prune" {
		return cmdRunsPrune(args[1:], stdout, stderr)
	}
	fs, _ := newFlags("runs", stdout, stderr)
	dir := fs.String("dir", ".", "the directory whose runs to list (they are under DIR/.runner/runs)")
	asJSON := fs.Bool("json", false, "print the runs as a JSON array")
	status := fs.String("status", "", "only runs with this status: running, waiting, succeeded, failed or interrupted")
	plan := fs.String("plan", "", "only runs of plans whose path or name contains this")
	limit := fs.Int("limit", 0, "only the newest `N` runs that match (still listed oldest first); 0: all")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "runs takes no arguments but prune (got %q): use --dir for another directory", pos[0])
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	switch *status {
	case "", "running", "waiting", "succeeded", "failed", "interrupted":
	default:
		return usageErr(stderr, fs, "--status %q: want running, waiting, succeeded, failed or interrupted", *status)
	}
	if *limit < 0 {
		return usageErr(stderr, fs, "--limit %d: want a number of runs, or 0 for all", *limit)
	}
	kept, _, err := runs.Find(*dir, runs.Query{Status: *status, Plan: *plan, Limit: *limit, NewestFirst: *limit > 0})
	if err != nil {
		fmt.Fprintf(stderr, "runner runs: %v\n", err)
		return exitUsage
	}
	if *limit > 0 {
		slices.Reverse(kept)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(kept)
		return exitOK
	}
	if len(kept) == 0 {
		fmt.Fprintf(stderr, "no runs under %s%s\n", runs.RunsDir(*dir), filterText(*status, *plan))
		return exitOK
	}
	rows := make([][]string, 0, len(kept)+1)
	rows = append(rows, []string{"ID", "PLAN", "STATUS", "STARTED", "DURATION", "STEPS", "TOKENS", "COST"})
	now := time.Now()
	cells := make([]string, 8*len(kept)) // one allocation for every row's cells
	for i, r := range kept {
		row := cells[8*i : 8*i+8 : 8*i+8]
		row[0], row[1], row[2] = r.ID, orDash(r.Plan), r.StatusText()
		row[3], row[4], row[5] = r.StartedAt.Local().Format("2006-01-02 15:04:05"), r.DurationText(now), r.StepsText()
		row[6], row[7] = r.TokensText(), r.CostText()
		rows = append(rows, row)
	}
	writeTable(stdout, rows)
	return exitOK
}

// filterText says which filters a listing that found nothing had, so an
// empty answer to a filter is not read as an empty directory.
func filterText(status, plan string) string {
	var parts []string
	if status != "" {
		parts = append(parts, "--status "+status)
	}
	if plan != "" {
		parts = append(parts, fmt.Sprintf("--plan %q", plan))
	}
	if len(parts) == 0 {
		return ""
	}
	return " match " + strings.Join(parts, " and ")
}

func cmdRunsPrune(args []string, stdout, stderr io.Writer) int {
	fs, _ := newFlags("runs", stdout, stderr)
	fs.Usage = commandUsage(fs, "runs", stdout)
	dir := fs.String("dir", ".", "the directory whose runs to prune (they are under DIR/.runner/runs)")
	keep := fs.Int("keep", 0, "keep the newest `N` runs (of those --status names)")
	older := fs.String("older-than", "", "remove only runs started longer ago than `AGE` (30d, 36h)")
	var status stringList
	fs.Var(&status, "status", "only runs with this status: succeeded, failed or interrupted (repeatable)")
	dry := fs.Bool("dry-run", false, "list the runs that would be removed, remove nothing")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "runs prune takes no arguments (got %q): use --dir for another directory", pos[0])
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	o := runs.PruneOptions{Keep: *keep, Status: status, DryRun: *dry}
	if *older != "" {
		if o.OlderThan, err = parseAge(*older); err != nil {
			return usageErr(stderr, fs, "--older-than %v", err)
		}
	}
	if *keep == 0 && *older == "" && len(status) == 0 {
		// No rule given: the user's policy, if the config has one.
		pol, path, ok, err := prunePolicy()
		if err != nil {
			return usageErr(stderr, fs, "%v", err)
		}
		if !ok {
			return usageErr(stderr, fs, "say which runs go (--keep N, --older-than AGE), or set runs.prune in %s (docs/running.md)", orDash(path))
		}
		pol.DryRun = *dry
		o = pol
	}
	if err := o.Check(); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	gone, err := runs.Prune(*dir, o)
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	for _, r := range gone {
		fmt.Fprintf(stdout, "%s %s  %s  %s\n", verb, r.ID, orDash(r.Plan), r.Status)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner runs prune: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s %d runs under %s\n", verb, len(gone), runs.RunsDir(*dir))
	return exitOK
}

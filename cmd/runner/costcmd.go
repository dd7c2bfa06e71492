package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/budget"
	"github.com/planrunner/runner/internal/runs"
)

// costRow is the spending of one agent, model, plan or day.
type costRow struct {
	Key     string  `json:"key"`
	Calls   int     `json:"calls"`
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// costReport is what `runner cost` shows.
type costReport struct {
	Since   time.Time `json:"since"`
	Runs    int       `json:"saved_runs"`    // saved runs under --dir that spent
	Ledger  int       `json:"ledger_calls"`  // calls of the budget ledger not in those runs
	Pending int       `json:"pending_calls"` // of them, calls under way (their most)
	ByDay   []costRow `json:"by_day"`
	ByPlan  []costRow `json:"by_plan"`
	ByAgent []costRow `json:"by_agent"`
	ByModel []costRow `json:"by_model"`
	Total   costRow   `json:"total"`
}

// costCall is one model call, from a saved run or the ledger.
type costCall struct {
	day, plan, agent, model string
	tokens                  int
	usd                     float64
}

func cmdCost(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("cost", stdout, stderr)
	dir := fs.String("dir", ".", "directory whose saved runs (DIR/.runner/runs) are counted")
	since := fs.String("since", "", "count from this UTC day (2026-03-01) or this long ago (30d, 36h); default: the start of this UTC month")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 0 {
		return usageErr(stderr, fs, "takes no arguments")
	}
	if code, ok := dirFlag(stderr, fs, "dir", *dir); !ok {
		return code
	}
	now := time.Now().UTC()
	from := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	if *since != "" {
		if from, err = parseSince(*since, now); err != nil {
			return usageErr(stderr, fs, "--since: %v", err)
		}
	}
	rep, err := spending(*dir, budget.Open(budget.Dir(os.Getenv)), from, now)
	if err != nil {
		fmt.Fprintf(stderr, "runner cost: %v\n", err)
		return exitFailed
	}
	out, flush := buffered(stdout)
	defer flush()
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
		return exitOK
	}
	writeCost(out, rep)
	return exitOK
}

// parseSince reads --since: a UTC day or an age.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	d, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want a UTC day (2026-03-01) or an age (30d, 36h)", s)
	}
	return now.Add(-d), nil
}

// spending sums the model calls of the runs saved under dir, and those of
// the ledger made by runs not among them (runs elsewhere on the machine
// that had budgets), from since on. A saved run counts on the UTC day it
// started.
func spending(dir string, l *budget.Ledger, since, now time.Time) (*costReport, error) {
	rep := &costReport{Since: since}
	var calls []costCall
	// The run index says which runs started too early, so they are not
	// read.
	list, _, err := runs.Find(dir, runs.Query{Since: since})
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range list {
		if s.StartedAt.Before(since) || s.Usage.Calls == 0 || s.Error != "" {
			continue
		}
		b, err := board.LoadForRead(s.Path)
		if err != nil {
			continue
		}
		seen[s.ID] = true
		rep.Runs++
		plan := s.Name
		if plan == "" {
			plan = s.Plan
		}
		for _, r := range b.RecordingsKeyed() {
			if !agents.IsModelCall(r) {
				continue
			}
			var resp struct {
				Model string       `json:"model"`
				Usage agents.Usage `json:"usage"`
			}
			json.Unmarshal(r.Response, &resp)
			usd, _ := agents.RecordingCost(r)
			calls = append(calls, costCall{day: s.StartedAt.UTC().Format("2006-01-02"), plan: plan, agent: r.Agent,
				model: resp.Model, tokens: resp.Usage.Total(), usd: usd})
		}
	}
	recs, err := l.Records(since, now)
	if err != nil {
		return nil, err
	}
	for _, e := range budget.Sum(recs, now) {
		if seen[e.Run] || e.Time.Before(since) {
			continue
		}
		rep.Ledger++
		if e.Pending {
			rep.Pending++
		}
		calls = append(calls, costCall{day: e.Time.UTC().Format("2006-01-02"), plan: e.Plan, agent: e.Agent,
			model: e.Model, tokens: e.Tokens, usd: e.USD})
	}
	group := func(key func(costCall) string) []costRow {
		by := map[string]*costRow{}
		for _, c := range calls {
			k := key(c)
			if k == "" {
				k = "-"
			}
			r := by[k]
			if r == nil {
				r = &costRow{Key: k}
				by[k] = r
			}
			r.Calls++
			r.Tokens += c.tokens
			r.CostUSD += c.usd
		}
		out := make([]costRow, 0, len(by))
		for _, r := range by {
			r.CostUSD = roundCost(r.CostUSD)
			out = append(out, *r)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
		return out
	}
	rep.ByDay = group(func(c costCall) string { return c.day })
	rep.ByPlan = group(func(c costCall) string { return c.plan })
	rep.ByAgent = group(func(c costCall) string { return c.agent })
	rep.ByModel = group(func(c costCall) string { return c.model })
	if t := group(func(costCall) string { return "total" }); len(t) == 1 {
		rep.Total = t[0]
	} else {
		rep.Total = costRow{Key: "total"}
	}
	return rep, nil
}

func roundCost(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }

func writeCost(w io.Writer, rep *costReport) {
	fmt.Fprintf(w, "spending since %s UTC: %d saved runs", rep.Since.Format("2006-01-02 15:04"), rep.Runs)
	if rep.Ledger > 0 {
		fmt.Fprintf(w, ", %d calls of other runs from the budget ledger", rep.Ledger)
		if rep.Pending > 0 {
			fmt.Fprintf(w, " (%d under way, at their most)", rep.Pending)
		}
	}
	fmt.Fprintln(w)
	for _, g := range []struct {
		name string
		rows []costRow
	}{{"day", rep.ByDay}, {"plan", rep.ByPlan}, {"agent", rep.ByAgent}, {"model", rep.ByModel}} {
		if len(g.rows) == 0 {
			continue
		}
		fmt.Fprintf(w, "by %s:\n", g.name)
		width := 0
		for _, r := range g.rows {
			width = max(width, len(r.Key))
		}
		for _, r := range g.rows {
			fmt.Fprintf(w, "  %-*s  %10s  %4d calls  %d tokens\n", width, r.Key, board.FormatUSD(r.CostUSD), r.Calls, r.Tokens)
		}
	}
	fmt.Fprintf(w, "total: %s, %d calls, %d tokens\n", board.FormatUSD(rep.Total.CostUSD), rep.Total.Calls, rep.Total.Tokens)
}

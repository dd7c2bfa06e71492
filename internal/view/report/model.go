// Package report renders a saved run (blackboard.json) as one
// self-contained HTML file: no script, no network, nothing outside the
// file, so it opens from file:// and can be mailed or archived. Everything
// in it that came from the run (model answers, command output, board
// values) is data and is escaped by html/template; a Content-Security-Policy
// that forbids scripts guards against a mistake in that.
//
// A step is shown by the kinds of result its type has (engine.Caps.Shows:
// tests, an edit, a process, a person's answer, a model's), never by the
// type's name. It imports board, engine, steps (the types, by name),
// plans, agents, patch and runs; never a server.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/patch"
	"github.com/planrunner/runner/internal/steps"
)

// view is everything the template shows, computed once.
type view struct {
	Run        board.Run
	PlanName   string
	PlanDesc   string
	Duration   string
	Vars       []kv
	Agents     []kv
	Models     []modelUsage
	TotalUsage modelUsage
	// Cache: per agent (that answered), the calls that read or wrote the
	// provider's prompt cache; none when no call did.
	Cache []agentCache
	// EditRates: model answers applied on the first try (edits.go).
	EditRates []editRate
	AnyCost   bool
	Counts    []kv        // step visits by status
	Steps     []*stepView // every visit, in saved order
	Tree      []*stepView // the visits not run by another, each with its children (group.go)
	// The timeline's rows and the steps in runs of chunk (see chunkSize):
	// one run, unwrapped, for a short page.
	TimelineChunks iter.Seq[[]row]
	TreeChunks     [][]*stepView
	Chunked        bool
	// Lazy: the steps' boxes keep their closed steps as data (lazy.go),
	// StepBoxes then being what the template writes of them.
	Lazy      bool
	StepBoxes iter.Seq[[]segment]
	NeverRan  []string
	Keys      iter.Seq[keyView] // made as the page is written; nil: none
	Sections  []sectionView
	Conflicts []board.Entry
	Topics    []kv
	Generated string
	Resumed   bool
	Waiting   []waitView
	Live      *Live
	Seq       int // the board's entries when the page was made
	Running   []runningView
}

// runningView is a step visit running as the live page is made.
type runningView struct{ Label, Name, Parent, For, Answer string }

type kv struct{ K, V string }

type modelUsage struct {
	Model                string
	Calls                int
	Input, Output, Total int
	Cost                 float64
	HasCost              bool
}

// row is one line of the timeline: a top-level visit, with a group's
// children beside each other.
type row struct {
	Step     *stepView
	Children []*stepView
}

// Left is where the bar starts, % of the run.
func (r row) Left() float64 { return r.Step.Left() }

// Width is the bar's width, % of the run.
func (r row) Width() float64 { return r.Step.Width() }

// Fold: too many children to show open, folded under one line.
func (r row) Fold() bool { return len(r.Children) > groupOpenMax }

// stepDetail is what a step's markup shows below its line.
type stepDetail struct {
	Inputs   []kv
	Output   string
	Result   map[string]any
	Files    []fileView
	DiffText []diffFile
	Test     *testView
	Command  *commandView
	Extra    string // the result as JSON, for types without a view
	Sandbox  string // how a command or test step was confined
	Input    *answerView
}

// Detail is what s's markup shows below its line, made each time its
// markup is (once a page) and let go of once written: at 100k steps the
// details of all of them held at once were most of what the report kept.
func (s *stepView) Detail() *stepDetail { return s.detail() }

type callView struct {
	Call      int
	Agent     string
	Model     string
	System    string
	Messages  []messageView
	Answer    string
	ToolCalls []toolCallView
	// How System and Answer are shown (see dedupTexts).
	SystemV, AnswerV *textView
	Usage            string
	FinishReason     string
	Cost             float64 // recorded, else at the model's price
	HasCost          bool    // false: neither is known
}

type messageView struct {
	Role, Content string
	ContentV      *textView // how Content is shown (see dedupTexts)
	ToolCalls     []toolCallView
	IsError       bool
}

type toolCallView struct{ Name, Args string }

// textView is a model call's system prompt, message or answer as the page
// shows it: the text itself (with an ID when later calls point to it), or,
// for a long text already shown, a link to where it is (Ref).
type textView struct {
	Text, ID     string
	Ref, RefName string
	Len          int
}

type fileView struct {
	Path, Op       string
	Added, Removed int
}

type diffFile struct {
	Name  string
	Lines []diffLine
}

type diffLine struct{ Class, Text string }

type testView struct {
	Outcome     string
	Counts      []kv
	Failures    []failureView
	BuildErrors []string
	Summary     string
}

type failureView struct {
	ID, Where, Message, Excerpt string
}

type commandView struct {
	ExitCode       string
	Stdout, Stderr string
}

type keyView struct {
	Key, Author, Value, TTL, Updated string
	Version                          int64
	// Beat is a signal's heartbeat state (alive or stale); "" for other keys.
	Beat string
}

type sectionView struct {
	Name    string
	N       int         // its entries
	Entries []entryView // a short section's (no Listing)
	// Listing is a long section's entries as aligned text lines, written
	// instead of a table (see listingMin) a part at a time; nil: a table.
	Listing iter.Seq[string]
}

// listingMin is the number of entries from which a board section is
// written as one block of text lines rather than a table: a run of 10,000
// steps logs 10,000 entries, and a table row costs the browser nine
// elements where a line costs none. The section starts closed either way.
const listingMin = 200

type entryView struct {
	Seq                                 int64
	Role, Author, Label, Key, Topic, TS string
	Version                             int64
	Content                             string
	Deleted                             bool
	Block                               bool // shown as a block (<pre>), not a line
}

// build turns a board into what the page shows.
func build(b *board.Board, opt Options) *view {
	now := opt.Now
	run := b.Run()
	v := &view{Run: run, Generated: now.UTC().Format(time.RFC3339), Live: opt.Live, Seq: b.Len()}
	types := opt.Types
	if types == nil {
		types = steps.Registry()
	}
	shows := func(typ string) engine.Shows { return types.Caps(typ).Shows }
	plan := readPlan(run)
	if plan != nil {
		v.PlanName, v.PlanDesc = plan.name, plan.desc
	}
	if v.PlanName == "" {
		v.PlanName = run.PlanPath
	}
	end := now
	if run.FinishedAt != nil {
		end = *run.FinishedAt
	}
	// The records are read one at a time, without their inputs, each
	// step's view keeping what its line shows (stepRec): a step's inputs
	// and result are read back from the board as its markup is made.
	if n := b.NumSteps(); n > 0 {
		if last := b.StepBrief(n - 1).FinishedAt; run.FinishedAt == nil && !last.IsZero() {
			end = last
		}
	}
	total := end.Sub(run.StartedAt)
	pg := &pageOf{b: b, start: run.StartedAt, total: total, shows: shows}
	v.Duration = dur(total)
	for _, k := range sortedKeys(run.Vars) {
		v.Vars = append(v.Vars, kv{k, text(run.Vars[k])})
	}
	for _, a := range sortedKeys(run.Agents) {
		for _, f := range sortedKeys(run.Agents[a]) {
			v.Agents = append(v.Agents, kv{a + "." + f, run.Agents[a][f]})
		}
	}

	calls := map[string][]callView{}
	recs := b.Recordings()
	v.Models, v.TotalUsage, v.AnyCost, v.Cache = usage(recs, calls)
	v.Waiting = waiting(run, opt.BoardPath, now)

	// Steps, in the order they finished (the saved order).
	type visit struct {
		label string
		n     int
	}
	seen := map[visit]bool{}
	counts := map[string]int{}
	byParent := map[string][]*stepView{}
	ran := map[string]bool{}
	clocks := &clockIndex{recs: recs}
	empty := engine.EmptyFiles(recs)
	i := -1
	for r := range b.StepsBrief() {
		i++
		rec := &r
		s := stepOf(pg, i, rec, shows(rec.Type), plan, clocks, calls)
		if e := empty[visitKey(rec.Label, rec.Visit)]; len(e) > 0 {
			s.more().empty = e
		}
		v.Steps = append(v.Steps, s)
		if s.Tolerate {
			counts["tolerated"]++ // the run went on: not a failure of the run
		} else {
			counts[s.Status]++
		}
		ran[rec.Label] = true
		key := visit{rec.Label, rec.Visit}
		if seen[key] {
			v.Resumed = true // a visit run again after a resume
		}
		seen[key] = true
		if rec.Parent != "" {
			byParent[rec.Parent] = append(byParent[rec.Parent], s)
		}
	}
	anchors(v.Steps)
	for _, st := range []string{"succeeded", "failed", "tolerated", "canceled", "skipped", "interrupted"} {
		switch n := counts[st]; {
		case n == 0:
		case st != "tolerated":
			v.Counts = append(v.Counts, kv{st, fmt.Sprint(n)})
		case n == 1:
			v.Counts = append(v.Counts, kv{"failure tolerated", "1"})
		default:
			v.Counts = append(v.Counts, kv{"failures tolerated", fmt.Sprint(n)})
		}
	}
	tl := timeline(v.Steps, byParent)
	v.Tree = tree(v.Steps)
	dedupTexts(v.Tree, map[string]*textView{}, new(int))
	v.TimelineChunks, v.TreeChunks = tl.chunks(), chunks(v.Tree)
	v.Chunked = len(chunks(tl.tops)) > 1 || len(v.TreeChunks) > 1
	if len(v.Steps) > 500 {
		// A long run: closed sections cost the browser no layout.
		for _, s := range v.Steps {
			s.Open = false
		}
	} else if len(v.Steps) <= 40 {
		// A short run: show what the model, the diffs and the tests did.
		for _, s := range v.Steps {
			if shows(s.Rec.Type).Any(engine.ShowsModel | engine.ShowsAgents | engine.ShowsEdit | engine.ShowsTests) {
				s.Open = true
			}
		}
	}
	openGroups(v.Tree, len(v.Steps) > 500)
	if opt.Live != nil {
		for _, r := range opt.Live.Running {
			v.Running = append(v.Running, runningView{Label: r.Label, Name: visitName(r.Label, r.Visit), Parent: r.Parent,
				For: dur(now.Sub(r.Since)), Answer: r.Answer})
			ran[r.Label] = true
		}
	}
	if plan != nil {
		for _, label := range plan.labels {
			if !ran[label] {
				v.NeverRan = append(v.NeverRan, label)
			}
		}
	}
	v.EditRates = editRates(len(v.Steps), func(i int) string { return v.Steps[i].Rec.Type }, b.StepBrief, shows,
		func(i int) string { return b.Step(i).Inputs["diff"] })
	v.board(b, now)
	return v
}

// anchors sets the steps' element ids, stable across reports of the same
// run so that a link to one can be shared: step-LABEL-VISIT (a label is
// [a-z][a-z0-9_]*, so the dashes are unambiguous). A visit that ran more
// than once (interrupted, then run again on resume) keeps the plain id
// for its last run; its earlier runs are step-LABEL-VISIT-earlierN.
func anchors(steps []*stepView) {
	type visit struct {
		label string
		n     int
	}
	runs := map[visit]int32{}
	for _, s := range steps {
		runs[visit{s.Rec.Label, s.Rec.Visit()}]++
	}
	seen := map[visit]int32{}
	for _, s := range steps {
		k := visit{s.Rec.Label, s.Rec.Visit()}
		if runs[k] == 1 {
			continue
		}
		seen[k]++
		if seen[k] < runs[k] {
			s.earlier = seen[k]
		}
	}
}

// timeline orders the top-level visits by start, each group's children
// (of that visit: those that started inside it) beside it; a row is made
// as the page writes it, not held for every visit.
func timeline(steps []*stepView, byParent map[string][]*stepView) *timelineRows {
	var tops []*stepView
	for _, s := range steps {
		if s.Rec.Parent == "" {
			tops = append(tops, s)
		}
	}
	less := func(i, j int) bool { return tops[i].Rec.StartedAt().Before(tops[j].Rec.StartedAt()) }
	if !sort.SliceIsSorted(tops, less) {
		sort.SliceStable(tops, less)
	}
	return &timelineRows{tops: tops, within: childrenWithin(byParent)}
}

type timelineRows struct {
	tops   []*stepView // the top-level visits, by start
	within func(*stepView) []*stepView
}

// chunks gives the rows in the page's runs of them (chunks).
func (t *timelineRows) chunks() iter.Seq[[]row] {
	return func(yield func([]row) bool) {
		for _, c := range chunks(t.tops) {
			rows := make([]row, len(c))
			for i, s := range c {
				rows[i] = row{Step: s, Children: t.within(s)}
				kids := rows[i].Children
				sort.SliceStable(kids, func(i, j int) bool { return before(kids[i], kids[j]) })
			}
			if !yield(rows) {
				return
			}
		}
	}
}

// childrenWithin gives a group visit's children: those of its label that
// started at or after it and finished by its end, in the saved order.
// Each visit of a group looked through the children of all its visits
// (a group in a loop of n visits cost n² looks); the children are sorted
// by start once per group label and each visit looks only at those that
// started within it. A child without an end (still running, or saved
// with a zero end) is looked at by every visit, as before.
func childrenWithin(byParent map[string][]*stepView) func(*stepView) []*stepView {
	type child struct {
		at int // place in the saved order
		s  *stepView
	}
	type kids struct {
		byStart []child // ended children, by start
		open    []child // children that ended before they started: no end
	}
	index := map[string]*kids{}
	return func(g *stepView) []*stepView {
		cs := byParent[g.Rec.Label]
		if len(cs) == 0 {
			return nil
		}
		k := index[g.Rec.Label]
		if k == nil {
			k = &kids{}
			for i, c := range cs {
				if c.Rec.FinishedAt().Before(c.Rec.StartedAt()) {
					k.open = append(k.open, child{i, c})
				} else {
					k.byStart = append(k.byStart, child{i, c})
				}
			}
			sort.SliceStable(k.byStart, func(i, j int) bool { return k.byStart[i].s.Rec.StartedAt().Before(k.byStart[j].s.Rec.StartedAt()) })
			index[g.Rec.Label] = k
		}
		start, end := g.Rec.StartedAt(), g.Rec.FinishedAt()
		var in []child
		keep := func(c child) {
			timelineChildrenLooked.Add(1)
			if !c.s.Rec.StartedAt().Before(start) && !c.s.Rec.FinishedAt().After(end) {
				in = append(in, c)
			}
		}
		// An ended child within the visit started in [start, end].
		for i := sort.Search(len(k.byStart), func(i int) bool { return !k.byStart[i].s.Rec.StartedAt().Before(start) }); i < len(k.byStart) && !k.byStart[i].s.Rec.StartedAt().After(end); i++ {
			keep(k.byStart[i])
		}
		for _, c := range k.open {
			keep(c)
		}
		if len(in) == 0 {
			return nil
		}
		sort.Slice(in, func(i, j int) bool { return in[i].at < in[j].at })
		out := make([]*stepView, len(in))
		for i, c := range in {
			out[i] = c.s
		}
		return out
	}
}

// timelineChildrenLooked counts the children the timeline looked at, for
// a test: each about once, however often its group ran.
var timelineChildrenLooked atomic.Int64

// before orders a group's children on the timeline: items by index (the
// input's order), other children as they started.
func before(a, b *stepView) bool {
	la, ia, okA := engine.SplitItemLabel(a.Rec.Label)
	lb, ib, okB := engine.SplitItemLabel(b.Rec.Label)
	if okA && okB && la == lb {
		return ia < ib
	}
	return a.Rec.StartedAt().Before(b.Rec.StartedAt())
}

func bar(start time.Time, total time.Duration, started, finished time.Time) (left, width float64) {
	if total <= 0 {
		return 0, 100
	}
	left = 100 * float64(started.Sub(start)) / float64(total)
	width = 100 * float64(finished.Sub(started)) / float64(total)
	left = min(max(left, 0), 100)
	width = min(max(width, 0.3), 100-left)
	return left, width
}

func stepOf(pg *pageOf, at int, rec *board.StepRecord, sh engine.Shows, plan *runPlan, clocks *clockIndex, calls map[string][]callView) *stepView {
	s := &stepView{Rec: recOf(rec), Status: rec.Status, pg: pg, at: int32(at)}
	if sh.Has(engine.ShowsAsk) {
		var res map[string]any
		if len(rec.Result) > 0 {
			_ = json.Unmarshal(rec.Result, &res) // what decodes: as the detail reads it
		}
		s.more().ask = answered(pg.b.Step(at), res, plan, clocks)
	}
	if plan != nil && rec.Status == "failed" && plan.tolerate[rec.Label] {
		s.Tolerate = true
	}
	s.Open = rec.Status == "failed" && !s.Tolerate || sh.Has(engine.ShowsAsk)
	if c := calls[visitKey(rec.Label, rec.Visit)]; len(c) > 0 {
		m := s.more()
		m.calls = c
		for _, c := range c {
			if c.HasCost {
				m.cost += c.Cost
				s.HasCost = true
			}
		}
	}
	return s
}

// visitKey names a visit in the maps of its calls and empty files.
func visitKey(label string, visit int) string { return label + "#" + strconv.Itoa(visit) }

// detail makes what s's markup shows below its line from its record.
func (s *stepView) detail() *stepDetail {
	whole := s.pg.b.Step(int(s.at))
	rec, sh := &whole, s.pg.shows(s.Rec.Type)
	d := &stepDetail{}
	for _, k := range sortedKeys(rec.Inputs) {
		d.Inputs = append(d.Inputs, kv{k, rec.Inputs[k]})
	}
	var res map[string]any
	if len(rec.Result) > 0 && json.Unmarshal(rec.Result, &res) == nil && res != nil {
		d.Result = res
		d.Output = text(res["output"])
		if d.Output == rec.Error {
			d.Output = "" // a test's summary is both; show it once
		}
	}
	if n := len(s.Calls()); n > 0 {
		// The prompt is the first call's last message, the output the
		// last call's answer (or the diff cut out of it): show them once.
		d.Inputs = without(d.Inputs, "prompt")
		if last := s.Calls()[n-1].Answer; d.Output != "" && strings.Contains(last, strings.TrimSpace(d.Output)) {
			d.Output = ""
		}
	}
	if sh.Has(engine.ShowsEdit) {
		d.Files = files(res)
		diff := rec.Inputs["diff"]
		if as, ok := patch.AsDiff([]byte(diff)); ok {
			// SEARCH/REPLACE blocks, apply_patch envelopes and whole
			// files are shown as the diff they make.
			diff = as
		}
		d.DiffText = splitDiff(diff)
		if d.DiffText != nil {
			d.Inputs = without(d.Inputs, "diff")
		}
	}
	if sh.Has(engine.ShowsTests) {
		d.Test = testOf(res)
	}
	if sh.Has(engine.ShowsAsk) {
		d.Input = s.rare().ask
		d.Output = "" // the answer, shown as such
	}
	if sh.Has(engine.ShowsProcess) {
		d.Command = &commandView{ExitCode: text(res["exit_code"]), Stdout: text(res["stdout"]), Stderr: text(res["stderr"])}
	}
	d.Sandbox = sandboxLine(res["sandbox"])
	if d.Test == nil && d.Command == nil && d.Input == nil && res != nil {
		extra := map[string]any{}
		for k, x := range res {
			if !shown[k] {
				extra[k] = x
			}
		}
		if len(extra) > 0 {
			data, _ := indentJSON(extra)
			d.Extra = string(data)
		}
	}
	if s.itemRows {
		d.Output, d.Extra, d.Command = "", "", nil
	}
	return d
}

// visitName is how the page names a visit: the label, with " #visit"
// after the first.
func visitName(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s #%d", label, visit)
	}
	return label
}

// sandboxLine says how a step was confined (its result's sandbox field,
// package sandbox's Report), or "" for a step without one.
func sandboxLine(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	if m["active"] != true {
		return fmt.Sprintf("sandbox %s: NOT confined: %v", text(m["mode"]), text(m["missing"]))
	}
	line := fmt.Sprintf("sandbox %s: namespaces", text(m["mode"]))
	if abi, ok := m["landlock"].(float64); ok && abi > 0 {
		line += fmt.Sprintf(", Landlock ABI %d", int(abi))
	}
	if m["network"] == true {
		return line + ", network"
	}
	return line + ", no network"
}

// shown are the result fields the page shows in their own place.
var shown = map[string]bool{"output": true, "usage": true, "model": true, "calls": true, "retries": true,
	"finish_reason": true, "files": true}

func without(in []kv, key string) []kv {
	out := in[:0:0]
	for _, x := range in {
		if x.K != key {
			out = append(out, x)
		}
	}
	return out
}

func files(res map[string]any) []fileView {
	list, _ := res["files"].([]any)
	var out []fileView
	for _, f := range list {
		m, _ := f.(map[string]any)
		out = append(out, fileView{Path: text(m["path"]), Op: text(m["op"]), Added: num(m["added"]), Removed: num(m["removed"])})
	}
	return out
}

// splitDiff cuts a diff (with whatever prose or fences came around it)
// into files, each line classed for colour.
func splitDiff(diff string) []diffFile {
	if diff == "" {
		return nil
	}
	lines := strings.Split(strings.TrimRight(diff, "\n"), "\n")
	var out []diffFile
	cur := -1
	for i, l := range lines {
		newFile := strings.HasPrefix(l, "diff --git ") ||
			(strings.HasPrefix(l, "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ") &&
				(i == 0 || !strings.HasPrefix(lines[i-1], "diff --git ")))
		if newFile {
			out = append(out, diffFile{Name: fileName(lines, i)})
			cur = len(out) - 1
		}
		if cur < 0 {
			out = append(out, diffFile{})
			cur = 0
		}
		class := "ctx"
		switch {
		case strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "diff --git ") || strings.HasPrefix(l, "index "):
			class = "hdr"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		case strings.HasPrefix(l, "```"):
			class = "fence"
		}
		if n := len(out[cur].Lines); n > 0 && out[cur].Lines[n-1].Class == class {
			out[cur].Lines[n-1].Text += "\n" + l // one element per run of lines
			continue
		}
		out[cur].Lines = append(out[cur].Lines, diffLine{class, l})
	}
	return out
}

// fileName is the new name of the file whose header starts at line i.
func fileName(lines []string, i int) string {
	for j := i; j < len(lines) && j < i+6; j++ {
		if name, ok := strings.CutPrefix(lines[j], "+++ "); ok {
			name, _, _ = strings.Cut(name, "\t")
			if name == "/dev/null" && j > 0 {
				name, _ = strings.CutPrefix(lines[j-1], "--- ")
			}
			name = strings.Trim(name, `"`)
			for _, p := range []string{"a/", "b/"} {
				name = strings.TrimPrefix(name, p)
			}
			return name
		}
	}
	return strings.TrimPrefix(lines[i], "diff --git ")
}

func testOf(res map[string]any) *testView {
	if res == nil {
		return nil
	}
	t := &testView{Outcome: text(res["outcome"]), Summary: text(res["summary"])}
	if c, ok := res["counts"].(map[string]any); ok {
		for _, k := range []string{"total", "passed", "failed", "skipped", "errors"} {
			if n := text(c[k]); n != "" {
				t.Counts = append(t.Counts, kv{k, n}) // a count the tool did not give is not shown as blank
			}
		}
	}
	list, _ := res["failures"].([]any)
	for _, f := range list {
		m, _ := f.(map[string]any)
		where := text(m["file"])
		if l := num(m["line"]); l > 0 {
			where = fmt.Sprintf("%s:%d", where, l)
		}
		t.Failures = append(t.Failures, failureView{ID: text(m["id"]), Where: where, Message: text(m["message"]), Excerpt: text(m["excerpt"])})
	}
	be, _ := res["build_errors"].([]any)
	for _, e := range be {
		if m, ok := e.(map[string]any); ok {
			where := text(m["file"])
			if l := num(m["line"]); l > 0 {
				where = fmt.Sprintf("%s:%d", where, l)
			}
			t.BuildErrors = append(t.BuildErrors, strings.TrimSpace(where+" "+text(m["message"])))
			continue
		}
		t.BuildErrors = append(t.BuildErrors, text(e))
	}
	return t
}

// The recorded exchanges, as a provider-neutral request and answer.
type recRequest struct {
	Model    string `json:"model"`
	System   string `json:"system"`
	Messages []struct {
		Role      string            `json:"role"`
		Content   string            `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
		IsError   bool              `json:"is_error"`
	} `json:"messages"`
}

type recResponse struct {
	Text      string            `json:"text"`
	ToolCalls []json.RawMessage `json:"tool_calls"`
	Usage     struct {
		Input      int `json:"input_tokens"`
		Output     int `json:"output_tokens"`
		CacheWrite int `json:"cache_creation_input_tokens"`
		CacheRead  int `json:"cache_read_input_tokens"`
		Reasoning  int `json:"reasoning_tokens"`
	} `json:"usage"`
	FinishReason string `json:"finish_reason"`
	Model        string `json:"model"`
}

// agentCache is what prompt caching did for one agent's calls.
type agentCache struct {
	Agent         string
	Calls         int
	Read, Written int
	Saved         float64
	HasSaved      bool
}

// usage sums tokens (and cost, where the answers carry one) per model,
// and files each exchange under its step visit.
func usage(recs []board.Recording, calls map[string][]callView) ([]modelUsage, modelUsage, bool, []agentCache) {
	per := map[string]*modelUsage{}
	cache := map[string]*agentCache{}
	var total modelUsage
	anyCost := false
	for _, r := range recs {
		if !agents.IsModelCall(r) {
			continue // clock readings, resume marks and people's answers are not model calls
		}
		var req recRequest
		var resp recResponse
		json.Unmarshal(r.Request, &req)
		if r.Kind == agents.KindCodingAgent {
			// The CLI's own request to the provider, in the provider's
			// shape: its model counts, its messages are not runner's.
			req = recRequest{Model: req.Model}
		}
		if json.Unmarshal(r.Response, &resp) != nil {
			continue
		}
		model := resp.Model
		if model == "" {
			model = req.Model
		}
		m := per[model]
		if m == nil {
			m = &modelUsage{Model: model}
			per[model] = m
		}
		m.Calls++
		m.Input += resp.Usage.Input
		m.Output += resp.Usage.Output
		m.Total += resp.Usage.Input + resp.Usage.Output
		total.Calls++
		total.Input += resp.Usage.Input
		total.Output += resp.Usage.Output
		total.Total += resp.Usage.Input + resp.Usage.Output
		cost, known := agents.RecordingCost(r)
		if known {
			m.Cost += cost
			total.Cost += cost
			m.HasCost, total.HasCost, anyCost = true, true, true
		}
		in := fmt.Sprintf("%d in", resp.Usage.Input)
		if u := resp.Usage; u.CacheRead+u.CacheWrite > 0 {
			in = fmt.Sprintf("%d in (%d from the cache, %d written to it)", u.Input, u.CacheRead, u.CacheWrite)
			ac := cache[r.Agent]
			if ac == nil {
				ac = &agentCache{Agent: r.Agent, HasSaved: true}
				cache[r.Agent] = ac
			}
			ac.Calls++
			ac.Read += u.CacheRead
			ac.Written += u.CacheWrite
			saved, ok := agents.RecordingCacheSaved(r)
			ac.Saved += saved
			ac.HasSaved = ac.HasSaved && ok
		}
		c := callView{Call: r.Call, Agent: r.Agent, Model: model, System: req.System, Answer: resp.Text,
			FinishReason: resp.FinishReason, ToolCalls: toolCalls(resp.ToolCalls),
			Usage: fmt.Sprintf("%s, %s", in, outTokens(resp.Usage.Output, resp.Usage.Reasoning)), Cost: cost, HasCost: known}
		for _, msg := range req.Messages {
			c.Messages = append(c.Messages, messageView{Role: msg.Role, Content: msg.Content, ToolCalls: toolCalls(msg.ToolCalls), IsError: msg.IsError})
		}
		key := fmt.Sprintf("%s#%d", r.Label, r.Visit)
		calls[key] = append(calls[key], c)
	}
	var out []modelUsage
	for _, m := range per {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	var byAgent []agentCache
	for _, c := range cache {
		byAgent = append(byAgent, *c)
	}
	sort.Slice(byAgent, func(i, j int) bool { return byAgent[i].Agent < byAgent[j].Agent })
	return out, total, anyCost, byAgent
}

func toolCalls(raw []json.RawMessage) []toolCallView {
	var out []toolCallView
	for _, r := range raw {
		var tc struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		}
		json.Unmarshal(r, &tc)
		out = append(out, toolCallView{Name: tc.Name, Args: string(tc.Args)})
	}
	return out
}

// board fills the board part: live keys, sections with their entries,
// conflicts and topics.
func (v *view) board(b *board.Board, now time.Time) {
	if len(b.Keys("")) > 0 {
		// Made again as the page is written: a long run's 30k keys were
		// 3 MB held.
		v.Keys = keyViews(b, now)
	}
	// Passes over the entries: the first counts each section's, the
	// second measures a long section's columns, the third keeps a short
	// one's as rows; a long one's are read again as its listing is
	// written into the page (a long run's 100k entries held as rows first
	// were a fifth of what its report held, their listing a tenth).
	count, topics, n := map[string]int{}, map[string]int{}, 0
	for e := range b.AllBare() {
		count[e.Section]++
		if e.Topic != "" {
			topics[e.Topic]++
		}
		if e.Section == board.ConflictSection {
			v.Conflicts = append(v.Conflicts, e) // its key, author, label and content shown
		}
		n++
	}
	rows, lists := map[string][]entryView{}, map[string]*listing{}
	for s, c := range count {
		if c >= listingMin {
			lists[s] = newListing()
		}
	}
	if len(lists) > 0 { // the listings' columns measured
		m := n
		for e := range b.AllBare() {
			if m--; m < 0 {
				break
			}
			if l := lists[e.Section]; l != nil {
				l.measure(entryOf(e))
			}
		}
	}
	m := n
	for e := range b.AllBare() {
		if m--; m < 0 {
			break // written since the first pass (a live run's board)
		}
		if lists[e.Section] != nil {
			continue
		}
		ev := entryOf(e)
		// Most entries are a word or a line: a plain cell is one element
		// fewer per entry than a <pre> (10,000 in a long run).
		ev.Block = len(ev.Content) > 120 || strings.ContainsAny(ev.Content, "\n\t")
		rows[e.Section] = append(rows[e.Section], ev)
	}
	for _, s := range sortedKeys(count) {
		sv := sectionView{Name: s, N: count[s], Entries: rows[s]}
		if l := lists[s]; l != nil {
			sv.Listing = l.text(b, s, n)
		}
		v.Sections = append(v.Sections, sv)
	}
	for _, t := range sortedKeys(topics) {
		v.Topics = append(v.Topics, kv{t, fmt.Sprint(topics[t])})
	}
}

// keyViews are the board's live keys as the page shows them.
func keyViews(b *board.Board, now time.Time) iter.Seq[keyView] {
	return func(yield func(keyView) bool) {
		for _, k := range b.Keys("") {
			kv := keyView{Key: k.Key, Version: k.Version, Author: k.Author, Updated: k.TS.UTC().Format(time.RFC3339)}
			if e, ok := b.Get(k.Key); ok {
				kv.Value = text(e.Content)
				kv.Beat = board.HeartbeatState(e, now)
			}
			if k.TTL != nil {
				left := time.Duration(*k.TTL*float64(time.Second)) - now.Sub(k.TS)
				kv.TTL = fmt.Sprintf("%s (%s left)", dur(time.Duration(*k.TTL*float64(time.Second))), dur(left))
			}
			if !yield(kv) {
				return
			}
		}
	}
}

func entryOf(e board.Entry) entryView {
	return entryView{Seq: e.Seq, Role: e.Role, Author: e.Author, Label: e.Label, Key: e.Key, Topic: e.Topic,
		TS: e.TS.UTC().Format("15:04:05.000"), Version: e.Version, Content: text(e.Content), Deleted: e.Deleted}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// text shows a value: strings as they are, anything else as JSON.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(x)
	}
	data, err := indentJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// indentJSON is v as indented JSON, with <, > and & as they are: the page
// escapes them (html/template), and a reader should see the value the
// run holds, not \u003c.
func indentJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

func dur(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// outTokens says how many tokens an answer had, and how many of them
// were reasoning.
func outTokens(out, reasoning int) string {
	if reasoning > 0 {
		return fmt.Sprintf("%d out (%d reasoning)", out, reasoning)
	}
	return fmt.Sprintf("%d out", out)
}

// ModelUsage is what one model was asked and answered in a run.
type ModelUsage struct {
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// Of the input, the tokens read from and written to the prompt
	// cache; of the output, the reasoning tokens.
	CacheReadTokens  int     `json:"cache_read_input_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_creation_input_tokens,omitempty"`
	ReasoningTokens  int     `json:"reasoning_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
	// PriceKnown: every call's cost is known (recorded, or at a known
	// price), so CostUSD is the whole cost, $0.00 included.
	PriceKnown bool `json:"-"`
}

// Tokens sums a run's recorded model calls per model, sorted by model:
// what usage sums, without what the page shows. It runs at the end of
// every run, so it decodes the usage and the model only: decoding the
// whole answer (as usage does, for the page) copied its text, 50 MB for
// a 50 MB answer, at the run's peak.
func Tokens(recs []board.Recording) []ModelUsage {
	per := map[string]*ModelUsage{}
	for _, r := range recs {
		if !agents.IsModelCall(r) {
			continue
		}
		var resp struct {
			Usage agents.Usage `json:"usage"`
			Model string       `json:"model"`
		}
		if json.Unmarshal(r.Response, &resp) != nil {
			continue
		}
		model := resp.Model
		if model == "" {
			var req struct {
				Model string `json:"model"`
			}
			json.Unmarshal(r.Request, &req)
			model = req.Model
		}
		m := per[model]
		if m == nil {
			m = &ModelUsage{Model: model, PriceKnown: true}
			per[model] = m
		}
		m.Calls++
		m.InputTokens += resp.Usage.InputTokens
		m.OutputTokens += resp.Usage.OutputTokens
		m.CacheReadTokens += resp.Usage.CacheReadInputTokens
		m.CacheWriteTokens += resp.Usage.CacheCreationInputTokens
		m.ReasoningTokens += resp.Usage.ReasoningTokens
		if cost, known := agents.RecordingCost(r); known {
			m.CostUSD += cost
		} else {
			m.PriceKnown = false
		}
	}
	out := make([]ModelUsage, 0, len(per))
	for _, m := range per {
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// sameTextMin is the length from which a text repeated across model calls
// (a system prompt sent with each of thousands of calls, the history an
// agent with memory sends again each call) is written once and the other
// calls link to it. A shorter text costs less written out than a link.
const sameTextMin = 200

// dedupTexts sets how each model call's texts are shown, walking the steps
// in the page's order so that a text is written where it first appears
// and later copies link back to it. The page stays searchable: each text
// is in it once, and following the link opens the step that holds it.
func dedupTexts(steps []*stepView, first map[string]*textView, n *int) {
	show := func(text, what string, s *stepView, call int) *textView {
		if text == "" {
			return nil
		}
		if len(text) < sameTextMin {
			return &textView{Text: text, Len: len(text)}
		}
		if f := first[text]; f != nil {
			if f.ID == "" {
				*n++
				f.ID = fmt.Sprintf("text-%d", *n)
			}
			return &textView{Ref: f.ID, RefName: f.RefName, Len: len(text)}
		}
		t := &textView{Text: text, Len: len(text), RefName: fmt.Sprintf("%s of %s, call %d", what, s.Name(), call)}
		first[text] = t
		return t
	}
	for _, s := range steps {
		// A visit run again after a resume shares its calls' slice with
		// the earlier run: copy before setting how this one shows them.
		if len(s.Calls()) > 0 {
			s.x.calls = append([]callView(nil), s.x.calls...)
		}
		for i := range s.Calls() {
			c := &s.x.calls[i]
			c.SystemV = show(c.System, "the system prompt", s, c.Call)
			c.Messages = append([]messageView(nil), c.Messages...)
			for j := range c.Messages {
				m := &c.Messages[j]
				m.ContentV = show(m.Content, "the "+m.Role+" message", s, c.Call)
			}
			c.AnswerV = show(c.Answer, "the answer", s, c.Call)
		}
		dedupTexts(s.Kids(), first, n)
	}
}

// listing writes entries as the section table's columns, one entry a
// line; a content of several lines goes on, indented, under its entry.
// The columns are aligned as text/tabwriter aligns them (each padded by
// two past its widest cell, over each run of one-line entries), their
// widths measured in a first pass over the entries (measure) and the
// lines written in a second (add): tabwriter held every cell of a
// section until it was flushed, 34 MB for 133k entries.
type listing struct {
	b      strings.Builder
	widths [][listCols]int // of each run of lines between several-line contents
	run    int             // the run add writes
}

const listCols = 6 // seq, time, role, author, step, key; then the content

var listHead = [listCols]string{"seq", "time", "role", "author", "step", "key"}

// oneCell keeps a cell on its line and in its column.
var oneCell = strings.NewReplacer("\t", " ", "\n", " ")

func newListing() *listing {
	l := &listing{widths: make([][listCols]int, 1)}
	l.fit(listHead)
	return l
}

// cells are e's columns, the first line of its content and the rest.
func cells(e entryView) (c [listCols]string, first, rest string, more bool) {
	key := ""
	if e.Key != "" {
		key = fmt.Sprintf("%s v%d", e.Key, e.Version)
		if e.Deleted {
			key += " (deleted)"
		}
	}
	if e.Topic != "" {
		key = strings.TrimSpace(key + " topic " + e.Topic)
	}
	c = [listCols]string{strconv.FormatInt(e.Seq, 10), e.TS, e.Role, e.Author, e.Label, key}
	for i := range c {
		c[i] = oneCell.Replace(c[i])
	}
	content := strings.ReplaceAll(e.Content, "\t", "    ")
	first, rest, more = strings.Cut(content, "\n")
	return c, first, rest, more
}

func (l *listing) fit(c [listCols]string) {
	w := &l.widths[len(l.widths)-1]
	for i := range c {
		w[i] = max(w[i], utf8.RuneCountInString(c[i])+2)
	}
}

// measure notes e's cells' widths.
func (l *listing) measure(e entryView) {
	c, _, _, more := cells(e)
	l.fit(c)
	if more { // its content's other lines end the run
		l.widths = append(l.widths, [listCols]int{})
	}
}

// listPart is about how much text the listing gives at a time.
const listPart = 32 << 10

// text is the listing of the first n entries' of section in b, given a
// part at a time, each measured before (measure).
func (l *listing) text(b *board.Board, section string, n int) iter.Seq[string] {
	return l.parts(func(yield func(entryView) bool) {
		for e := range b.AllBare() {
			if n--; n < 0 {
				return
			}
			if e.Section == section && !yield(entryOf(e)) {
				return
			}
		}
	})
}

// parts is the listing of es, a part at a time.
func (l *listing) parts(es iter.Seq[entryView]) iter.Seq[string] {
	return func(yield func(string) bool) {
		l.run = 0
		l.b = strings.Builder{}
		l.line(listHead, "content")
		for e := range es {
			l.add(e)
			if l.b.Len() >= listPart {
				part := l.b.String()
				l.b = strings.Builder{}
				if !yield(part) {
					return
				}
			}
		}
		part := l.b.String()
		l.b = strings.Builder{}
		yield(part)
	}
}

// add writes e's line (and its content's other lines).
func (l *listing) add(e entryView) {
	c, first, rest, more := cells(e)
	l.line(c, first)
	if more {
		l.b.WriteString("    " + strings.ReplaceAll(rest, "\n", "\n    ") + "\n")
		l.run++
	}
}

func (l *listing) line(c [listCols]string, last string) {
	w := l.widths[min(l.run, len(l.widths)-1)] // more runs than measured: a board changed under it
	for i := range c {
		l.b.WriteString(c[i])
		l.b.WriteString(strings.Repeat(" ", w[i]-utf8.RuneCountInString(c[i])))
	}
	l.b.WriteString(last)
	l.b.WriteByte('\n')
}

// chunkSize is how many timeline rows or steps a long page wraps in one
// box that the browser lays out only near the screen (content-visibility).
// While the page loads, the browser lays the page out again and again as
// the parser adds to it; with 10,000 siblings in one box each of those
// layouts walks all of them, with boxes of 100 only the box being filled
// and the hundred boxes.
const chunkSize = 100

func chunks[T any](all []T) [][]T {
	if len(all) <= 2*chunkSize {
		return [][]T{all}
	}
	var out [][]T
	for len(all) > 0 {
		n := min(chunkSize, len(all))
		out = append(out, all[:n])
		all = all[n:]
	}
	return out
}

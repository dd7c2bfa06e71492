package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/view/ghactions"
)

// progressView shows the steps of a run as they go, in plan order. On a
// terminal, finished steps scroll up as permanent lines while the running
// ones stay in a live block at the bottom with a spinner and their
// elapsed time; elsewhere each finished step is one plain line. A
// parallel group's line comes above its children's: the children are
// held (and shown in the live block) until the group ends.
type progressView struct {
	w       io.Writer
	live    bool // redraw a live block (a terminal)
	color   bool
	mu      sync.Mutex
	pos     map[string]int  // plan position of every label
	tolerop map[string]bool // continue_on_error steps
	running map[string]runningStep
	held    map[string][]board.StepRecord // finished children by running group
	drawn   int                           // lines of the live block on screen
	tick    int
	done    chan struct{}
	wg      sync.WaitGroup
	closed  bool
	width   func() int // the terminal's columns (0: unknown)
	// gh: on GitHub Actions each finished step is a log group holding its
	// output (unless output streams as it comes: --show-output).
	gh     *ghactions.Stream
	output bool
	// streamTail: the end of each running step's streamed model answer
	// (by label), shown on its line as it comes.
	streamTail map[string]string
}

type runningStep struct {
	label, parent string
	visit         int
	start         time.Time
}

// newProgress makes the display on w: live redraws a block of running
// steps (a terminal), color colours the marks (useColor).
func newProgress(w io.Writer, live, color bool) *progressView {
	p := &progressView{w: w, live: live, color: color,
		pos: map[string]int{}, tolerop: map[string]bool{}, running: map[string]runningStep{},
		held: map[string][]board.StepRecord{}, done: make(chan struct{}), width: func() int { return 0 }}
	if live {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

// setPlan tells the view the plan's order and which failures it tolerates.
func (p *progressView) setPlan(pl *plans.Plan) {
	if p == nil || pl == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, s := range pl.AllSteps() {
		p.pos[s.Label] = i
		p.tolerop[s.Label] = s.ContinueOnError
	}
}

func (p *progressView) loop() {
	defer p.wg.Done()
	t := time.NewTicker(120 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.mu.Lock()
			p.tick++
			p.redraw(nil)
			p.mu.Unlock()
		}
	}
}

func (p *progressView) StepStarted(label string, visit int, parent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[label] = runningStep{label: label, parent: parent, visit: visit, start: time.Now()}
	delete(p.streamTail, label)
	if p.live {
		p.redraw(nil)
	}
}

func (p *progressView) StepFinished(rec board.StepRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, rec.Label)
	delete(p.streamTail, rec.Label)
	if _, groupRuns := p.running[rec.Parent]; rec.Parent != "" && groupRuns {
		p.held[rec.Parent] = append(p.held[rec.Parent], rec)
		if p.live {
			p.redraw(nil)
		}
		return
	}
	kids := p.held[rec.Label] // the group's own, for GitHub's log group
	lines := p.treeLines(rec, "")
	if p.live {
		p.redraw(lines)
		return
	}
	if p.gh != nil {
		p.group(rec, lines, kids)
		return
	}
	for _, l := range lines {
		fmt.Fprintln(p.w, l)
	}
}

// treeLines are a finished step's lines, then its children's (held
// until it ended), each child's under it in turn: a sub-plan call's
// steps under the call, a call under its for_each item. A for_each of
// more items than the live block has rows shows one line counting them,
// and under it only the items that did not succeed.
func (p *progressView) treeLines(rec board.StepRecord, indent string) []string {
	kids := p.held[rec.Label]
	delete(p.held, rec.Label)
	p.sortChildren(kids)
	lines := p.stepLines(rec, kids, indent)
	items := allItems(kids)
	fold := len(kids) > maxRows && items
	if fold && rec.Error == "" {
		lines[0] += "  " + itemCounts(kids, len(kids), 0)
	}
	for _, k := range kids {
		// A failed for_each's line counts its canceled items: only the
		// failed ones are worth a line each.
		canceled := k.Status == "canceled" || k.Status == board.StatusInterrupted
		if fold && k.Status == board.StatusSucceeded || items && rec.Error != "" && canceled {
			p.drop(k.Label)
			continue
		}
		lines = append(lines, p.treeLines(k, indent+"  ")...)
	}
	return lines
}

// drop forgets the held children of a step that is not shown.
func (p *progressView) drop(label string) {
	for _, k := range p.held[label] {
		p.drop(k.Label)
	}
	delete(p.held, label)
}

// sortChildren puts a group's children in plan order, a for_each's items
// in input order.
func (p *progressView) sortChildren(kids []board.StepRecord) {
	sort.SliceStable(kids, func(i, j int) bool { return p.before(kids[i].Label, kids[j].Label) })
}

func (p *progressView) before(a, b string) bool {
	la, ia, okA := engine.SplitItemLabel(a)
	lb, ib, okB := engine.SplitItemLabel(b)
	if okA && okB && la == lb {
		return ia < ib
	}
	return p.pos[engine.BaseLabel(a)] < p.pos[engine.BaseLabel(b)]
}

// allItems says whether every record is an item of a for_each.
func allItems(recs []board.StepRecord) bool {
	for _, r := range recs {
		if _, _, ok := engine.SplitItemLabel(r.Label); !ok {
			return false
		}
	}
	return len(recs) > 0
}

// itemCounts says how a for_each's items stand: "40 items: 39 succeeded,
// 1 failed", with ", 3 running" while it runs.
func itemCounts(done []board.StepRecord, n, running int) string {
	counts := map[string]int{}
	for _, r := range done {
		counts[r.Status]++
	}
	var parts []string
	for _, st := range []string{board.StatusSucceeded, board.StatusFailed, "canceled", "interrupted", "skipped"} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if running > 0 {
		parts = append(parts, fmt.Sprintf("%d running", running))
	}
	return fmt.Sprintf("%d items: %s", n, strings.Join(parts, ", "))
}

// failedItems says how a failed for_each's items ended: "3 of 10 items
// failed, 5 canceled".
func failedItems(kids []board.StepRecord) string {
	failed, canceled := 0, 0
	for _, k := range kids {
		switch k.Status {
		case board.StatusFailed:
			failed++
		case "canceled", board.StatusInterrupted:
			canceled++
		}
	}
	s := fmt.Sprintf("%d of %d items failed", failed, len(kids))
	if canceled > 0 {
		s += fmt.Sprintf(", %d canceled", canceled)
	}
	return s
}

// group shows a finished step as a log group of GitHub Actions: its line
// is the title, and inside are its lines and what it printed (its
// children's with it, for a parallel group). The output is shown under
// stop-commands (the Stream), so a line of it that looks like a command
// is only text.
func (p *progressView) group(rec board.StepRecord, lines []string, kids []board.StepRecord) {
	p.gh.Commands(ghactions.Group(groupTitle(rec, p.tolerop[rec.Label])))
	for _, l := range lines {
		fmt.Fprintln(p.w, l)
	}
	if !p.output {
		for _, r := range append([]board.StepRecord{rec}, kids...) {
			if r.Label == rec.Label && len(kids) > 0 || showsTests(r) {
				// A group's output is its children's, shown next; a test
				// step's is its failures, each an annotation.
				continue
			}
			if out := stepOutput(r); out != "" {
				if len(kids) > 0 {
					fmt.Fprintf(p.w, "output of %s:\n", name(r.Label, r.Visit))
				}
				fmt.Fprintln(p.w, out)
			}
		}
	}
	p.gh.Commands(ghactions.EndGroup)
}

// showsTests says whether rec is a test step's (its type shows test results).
func showsTests(rec board.StepRecord) bool {
	return steps.Registry().Caps(rec.Type).Shows.Has(engine.ShowsTests)
}

// groupTitle is a step's line without colour: a group's title is text.
func groupTitle(rec board.StepRecord, tolerated bool) string {
	status := rec.Status
	if status == board.StatusFailed && tolerated {
		status = "failed (tolerated)"
	}
	return fmt.Sprintf("%s %s  %s  %s", marks[rec.Status], name(rec.Label, rec.Visit), status, ms(rec.DurationMS))
}

// groupOutputLines bounds a step's output in its group; the report and
// the blackboard keep all of it.
const groupOutputLines = 200

// stepOutput is what a step printed (a command's stdout and stderr) or
// its output, at most its last groupOutputLines lines.
func stepOutput(rec board.StepRecord) string {
	var r struct {
		Output any    `json:"output"`
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	json.Unmarshal(rec.Result, &r)
	if s, ok := r.Output.(string); ok {
		r.Output = rec.Text(s) // a large output comes as its key (board.Held)
	}
	text := strings.TrimRight(r.Stdout, "\n")
	if e := strings.TrimRight(r.Stderr, "\n"); e != "" {
		if text != "" {
			text += "\n"
		}
		text += e
	}
	if text == "" && r.Output != nil {
		text = strings.TrimRight(engine.Text(r.Output), "\n")
	}
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > groupOutputLines {
		lines = append([]string{fmt.Sprintf("(last %d of %d lines)", groupOutputLines, len(lines))}, lines[len(lines)-groupOutputLines:]...)
	}
	return strings.Join(lines, "\n")
}

// redraw clears the live block, prints finished lines above it, then
// draws the running steps again (a group with its children under it).
func (p *progressView) redraw(finished []string) {
	if p.closed {
		for _, l := range finished {
			fmt.Fprintln(p.w, l)
		}
		return
	}
	var b strings.Builder
	if p.drawn > 0 {
		b.WriteString(eraseBlock(p.drawn))
	}
	for _, l := range finished {
		b.WriteString(l + "\n")
	}
	frame := []rune(`⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏`)[p.tick%10]
	var rows []string
	for _, r := range p.sortedRunning("") {
		rows = append(rows, p.runningRows(r, "", frame)...)
	}
	if len(rows) > maxRows {
		rows = append(rows[:maxRows-1], fmt.Sprintf("  … and %d more lines", len(rows)-maxRows+1))
	}
	width := p.width()
	for _, r := range rows {
		b.WriteString(fit(r, width) + "\n")
	}
	p.drawn = len(rows)
	io.WriteString(p.w, b.String())
}

// streamed takes a piece of a running step's streamed answer: its line
// in the live block shows the answer's last line so far (the block is
// redrawn on the next tick).
func (p *progressView) streamed(c agents.StreamChunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.running[c.Label]; !ok {
		return
	}
	if p.streamTail == nil {
		p.streamTail = map[string]string{}
	}
	tail := p.streamTail[c.Label] + c.Text
	if i := strings.LastIndexByte(strings.TrimRight(tail, "\n"), '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	if len(tail) > streamTailMax {
		tail = tail[len(tail)-streamTailMax:]
		for !utf8.ValidString(tail) && tail != "" { // not from inside a character
			tail = tail[1:]
		}
	}
	p.streamTail[c.Label] = tail
}

// streamTailMax bounds what is kept of a streamed line: the live block
// cuts its rows to the terminal's width anyway.
const streamTailMax = 400

// maxRows is the live block's height: more rows than that are cut.
const maxRows = 16

// runningRows are a running step's rows in the live block: its line, then
// its children's, running and finished, in plan (or input) order, each
// running child's own under it. A for_each with more items than the
// block has rows is one line with its progress instead.
func (p *progressView) runningRows(r runningStep, indent string, frame rune) []string {
	head := fmt.Sprintf("%s%c %s  %s", indent, frame, name(r.label, r.visit), since(r.start))
	if tail := strings.TrimRight(p.streamTail[r.label], "\r\n"); tail != "" {
		head += "  " + tail
	}
	running, held := p.sortedRunning(r.label), p.held[r.label]
	if n := len(running) + len(held); n > maxRows && allItems(held) && allRunningItems(running) {
		return []string{head + "  " + itemCounts(held, n, len(running))}
	}
	type kid struct {
		label string
		rows  []string
	}
	var kids []kid
	for _, c := range running {
		kids = append(kids, kid{c.label, p.runningRows(c, indent+"  ", frame)})
	}
	for _, h := range held {
		kids = append(kids, kid{h.Label, p.stepLines(h, nil, indent+"  ")[:1]})
	}
	sort.SliceStable(kids, func(i, j int) bool { return p.before(kids[i].label, kids[j].label) })
	rows := []string{head}
	for _, k := range kids {
		rows = append(rows, k.rows...)
	}
	return rows
}

func allRunningItems(rs []runningStep) bool {
	for _, r := range rs {
		if _, _, ok := engine.SplitItemLabel(r.label); !ok {
			return false
		}
	}
	return true
}

// sortedRunning lists the running steps of a parent ("" for the top
// level) in plan order.
func (p *progressView) sortedRunning(parent string) []runningStep {
	var out []runningStep
	for _, r := range p.running {
		if r.parent == parent {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return p.before(out[i].label, out[j].label) })
	return out
}

// eraseBlock takes the cursor back to the first line of a live block of
// n lines and clears from there down. The carriage return first: a
// terminal that echoed ^C moved the cursor right, and clearing from there
// would leave the spinner on the line the warning is printed on.
func eraseBlock(n int) string { return fmt.Sprintf("\r\x1b[%dA\x1b[J", n) }

// fit cuts a live-block row to the terminal's width: a row that wrapped
// would take two lines while the redraw erases one, leaving a stale line
// on screen at every frame.
func fit(row string, width int) string {
	if width <= 0 || utf8.RuneCountInString(row) < width {
		return row
	}
	r := []rune(row)
	return string(r[:width-2]) + "…"
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// Write prints a log line above the live block (the logger writes here).
func (p *progressView) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live || p.closed {
		return p.w.Write(b)
	}
	if p.drawn > 0 {
		io.WriteString(p.w, eraseBlock(p.drawn))
		p.drawn = 0
	}
	n, err := p.w.Write(b)
	p.redraw(nil)
	return n, err
}

// close ends the live block; what is printed afterwards goes straight on.
func (p *progressView) close() {
	if p == nil {
		return
	}
	if p.live {
		close(p.done)
		p.wg.Wait()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.drawn > 0 {
		io.WriteString(p.w, eraseBlock(p.drawn))
		p.drawn = 0
	}
	// Children of a group that never finished (Ctrl-C) are shown too,
	// each with its own under it.
	isHeld := map[string]bool{}
	for _, recs := range p.held {
		for _, r := range recs {
			isHeld[r.Label] = true
		}
	}
	var groups []string
	for g := range p.held {
		if !isHeld[g] {
			groups = append(groups, g)
		}
	}
	sort.Slice(groups, func(i, j int) bool { return p.before(groups[i], groups[j]) })
	for _, g := range groups {
		kids := p.held[g]
		delete(p.held, g)
		p.sortChildren(kids)
		for _, k := range kids {
			for _, l := range p.treeLines(k, "  ") {
				fmt.Fprintln(p.w, l)
			}
		}
	}
	p.held = map[string][]board.StepRecord{}
	p.closed = true
}

// Marks and colours of the statuses; a failure under continue_on_error is
// "tolerated".
var (
	marks  = map[string]string{"succeeded": "✓", "failed": "✗", "tolerated": "✗", "skipped": "-", "canceled": "⊘", "interrupted": "⊘"}
	colors = map[string]string{"succeeded": "32", "failed": "31", "tolerated": "33", "skipped": "90", "canceled": "33", "interrupted": "33"}
)

// tailLines is how many lines of a failed step's output are shown.
const tailLines = 8

// stepLines is a finished step's line, and for a failure the last lines of
// what it printed. kids are a group's children, for its summary.
func (p *progressView) stepLines(rec board.StepRecord, kids []board.StepRecord, indent string) []string {
	status := rec.Status
	if status == "failed" && p.tolerop[rec.Label] {
		status = "tolerated"
	}
	mark := marks[status]
	if mark == "" {
		mark = "?"
	}
	if p.color {
		mark = "\x1b[" + colors[status] + "m" + mark + "\x1b[0m"
	}
	line := fmt.Sprintf("%s%s %s  %s", indent, mark, name(rec.Label, rec.Visit), ms(rec.DurationMS))
	if rec.Host != "" { // a run on many hosts (Temporal): where it ran
		line += "  on " + rec.Host
	}
	var tail []string
	switch {
	case status == "skipped" && rec.Error == "":
		line += "  (skipped)"
	case status == "canceled" || status == "interrupted":
		line += "  canceled: " + cancelReason(rec.Error)
	case rec.Error != "" && len(kids) > 0:
		// A group's error is its child's, which is shown under it.
		failed := 0
		for _, k := range kids {
			if k.Status == "failed" {
				failed++
			}
		}
		if allItems(kids) {
			line += "  " + failedItems(kids)
		} else {
			line += fmt.Sprintf("  %d of %d steps failed", failed, len(kids))
		}
		if status == "tolerated" {
			line += " (tolerated)"
		}
	case rec.Error != "":
		first, rest, _ := strings.Cut(rec.Error, "\n")
		if len(first) > 160 {
			first = first[:160] + "…"
		}
		if status == "tolerated" {
			line += "  failed (tolerated): " + first
		} else {
			line += "  " + first
		}
		tail = outputTail(rec, rest)
		if p.gh != nil && showsTests(rec) {
			tail = nil // on GitHub Actions each failed test is an annotation and in the summary
		}
		// A command's error ends with its last line of stderr: say it once.
		for len(tail) > 0 && strings.Contains(first, strings.TrimSpace(tail[len(tail)-1])) {
			tail = tail[:len(tail)-1]
		}
	}
	if rec.Goto != "" {
		line += "  → " + rec.Goto
	}
	out := []string{line}
	for _, t := range tail {
		out = append(out, indent+"    │ "+t)
	}
	return out
}

// cancelReason is why a step was canceled, said once.
func cancelReason(err string) string {
	switch {
	case strings.Contains(err, "sibling step failed"):
		return "a sibling step failed (fail_fast)"
	case err == "":
		return "the run was stopped"
	}
	return "interrupted"
}

// outputTail is the end of what a failed step printed: the rest of a
// multi-line error (a test summary), else the last lines of its stderr or
// stdout.
func outputTail(rec board.StepRecord, rest string) []string {
	text := strings.TrimRight(rest, "\n")
	if text == "" {
		var r struct {
			Stdout string `json:"stdout"`
			Stderr string `json:"stderr"`
		}
		json.Unmarshal(rec.Result, &r)
		text = strings.TrimRight(r.Stderr, "\n")
		if text == "" {
			text = strings.TrimRight(r.Stdout, "\n")
		}
	}
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return lines
}

func ms(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%dms", n)
	}
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func name(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s #%d", label, visit)
	}
	return label
}

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/board"
)

// progressView shows the steps of a run as they go. On a terminal, steps
// that finished scroll up as permanent lines while the running ones stay
// in a live block at the bottom with a spinner and their elapsed time;
// elsewhere each finished step is one plain line.
type progressView struct {
	w       io.Writer
	live    bool
	mu      sync.Mutex
	running map[string]runningStep
	drawn   int // lines of the live block on screen
	tick    int
	done    chan struct{}
	wg      sync.WaitGroup
}

type runningStep struct {
	label, parent string
	visit         int
	start         time.Time
}

func newProgress(w io.Writer, live bool) *progressView {
	p := &progressView{w: w, live: live, running: map[string]runningStep{}, done: make(chan struct{})}
	if live {
		p.wg.Add(1)
		go p.loop()
	}
	return p
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
			p.redraw("")
			p.mu.Unlock()
		}
	}
}

func (p *progressView) StepStarted(label string, visit int, parent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running[label] = runningStep{label: label, parent: parent, visit: visit, start: time.Now()}
	if p.live {
		p.redraw("")
	}
}

func (p *progressView) StepFinished(rec board.StepRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, rec.Label)
	line := finishedLine(rec, p.live)
	if p.live {
		p.redraw(line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// redraw clears the live block, prints a finished line above it if any,
// then draws the running steps again.
func (p *progressView) redraw(finished string) {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", p.drawn)
	}
	if finished != "" {
		b.WriteString(finished + "\n")
	}
	rows := make([]runningStep, 0, len(p.running))
	for _, r := range p.running {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].start.Before(rows[j].start) })
	const maxRows = 12
	spin := `⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏`
	frame := []rune(spin)[p.tick%10]
	shown := 0
	for i, r := range rows {
		if i == maxRows {
			fmt.Fprintf(&b, "  … and %d more running\n", len(rows)-maxRows)
			shown++
			break
		}
		fmt.Fprintf(&b, "%c %s%s  %s\n", frame, indent(r.parent), name(r.label, r.visit), time.Since(r.start).Round(100*time.Millisecond))
		shown++
	}
	p.drawn = shown
	io.WriteString(p.w, b.String())
}

// Write prints a log line above the live block (the logger writes here).
func (p *progressView) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.live {
		return p.w.Write(b)
	}
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
	n, err := p.w.Write(b)
	p.redraw("")
	return n, err
}

func (p *progressView) close() {
	if p.live {
		close(p.done)
		p.wg.Wait()
		p.mu.Lock()
		if p.drawn > 0 {
			fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
			p.drawn = 0
		}
		p.mu.Unlock()
	}
}

func finishedLine(rec board.StepRecord, color bool) string {
	mark := map[string]string{"succeeded": "✓", "failed": "✗", "skipped": "-", "interrupted": "!"}[rec.Status]
	if color {
		c := map[string]string{"succeeded": "32", "failed": "31", "skipped": "90", "interrupted": "33"}[rec.Status]
		mark = "\x1b[" + c + "m" + mark + "\x1b[0m"
	}
	line := fmt.Sprintf("%s %s%s  %s", mark, indent(rec.Parent), name(rec.Label, rec.Visit), ms(rec.DurationMS))
	if rec.Status == "skipped" && rec.Error == "" {
		line += "  (skipped)"
	}
	if rec.Error != "" {
		msg, _, _ := strings.Cut(rec.Error, "\n")
		if len(msg) > 160 {
			msg = msg[:160] + "…"
		}
		line += "  " + msg
	}
	if rec.Goto != "" {
		line += "  → " + rec.Goto
	}
	return line
}

func ms(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%dms", n)
	}
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func indent(parent string) string {
	if parent == "" {
		return ""
	}
	return "  "
}

func name(label string, visit int) string {
	if visit > 1 {
		return fmt.Sprintf("%s #%d", label, visit)
	}
	return label
}

package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/runs"
)

//go:embed report.html.tmpl
var pageSource string

//go:embed report.css
var css string

// page is parsed when a report is first written, not at program start.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
		"css": func() template.CSS { return template.CSS(css) },
		"usd": board.FormatUSD,
		"add": func(a, b int) int { return a + b },
		// The script of a long page and the CSP source that allows it alone.
		"lazyScript": func() template.HTML { return template.HTML("<script>" + lazyScript + "</script>") },
		"lazyCSP":    func() string { return lazyCSP },
	}).Parse(pageSource))
})

// Options say what the page cannot learn from the board.
type Options struct {
	// BoardPath is where the run is saved; a waiting input's `runner
	// answer` line names it ("" : the run's id, which runner finds under
	// the directory it is started in).
	BoardPath string
	// Now is the time the page says it was made, and against which TTLs
	// and waits are shown (zero: the time it is written).
	Now time.Time
	// Live makes the page the live view of `runner serve` (nil: the
	// self-contained report, with no script).
	Live *Live
	// Types are the step types that say how a step is shown, by the
	// kinds of result each has (engine.Caps.Shows); nil: steps.Registry().
	Types *engine.Registry
}

// Live is what the live page of `runner serve` adds to the report: its
// script (served by the same origin, the only one the page's policy
// allows), a form per waiting input, and where the page stands in the
// board so the script follows it from there.
type Live struct {
	Script string // the script's URL
	CSRF   string // carried by every POST the page makes
	By     string // who answers, as the form first says
	Back   string // the run list's URL
	Graph  string // the URL of the run's graph
	Events string // the URL of the run's event stream
	// Running are the step visits running now (runs.ReadRunning).
	Running []runs.RunningStep
	// Actions are what the page can do to the run now; nil: nothing.
	Actions *Actions
}

// Actions are the buttons of a live run page, each the URL it posts to
// ("": not offered).
type Actions struct {
	Stop, Resume, Fork string
	// ForkFrom are the step visits a fork can start from (LABEL#VISIT).
	ForkFrom []string
}

// Write renders the run saved in b as one HTML page.
func Write(w io.Writer, b *board.Board) error {
	return WriteWith(w, b, Options{})
}

// WriteAt is Write with the time the page says it was made (and against
// which TTLs are shown), for reproducible output.
func WriteAt(w io.Writer, b *board.Board, now time.Time) error {
	return WriteWith(w, b, Options{Now: now})
}

// WriteWith is Write with its options.
func WriteWith(w io.Writer, b *board.Board, opt Options) error {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	v := build(b, opt)
	var boxErr error
	if v.Chunked && opt.Live == nil {
		// The live page's script follows each step by its element:
		// it stays all markup.
		v.Lazy, v.StepBoxes = true, lazyBoxes(page(), v.TreeChunks, &boxErr)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := page().Execute(bw, v); err != nil {
		return err
	}
	if boxErr != nil {
		return boxErr
	}
	return bw.Flush()
}

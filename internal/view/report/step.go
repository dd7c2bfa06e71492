package report

import (
	"strconv"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
)

// stepView is a step visit as the page shows it. A page holds one for
// every visit while it is written, so a view keeps only what its line
// and the page's layout read; what few steps have (calls, children,
// costs, a question) is in a part of its own, and what can be said from
// the rest (its name, anchor, class, duration) is said when the
// template asks. At 100k steps the views were 540 bytes each, the
// largest part of what the report held.
type stepView struct {
	Rec      stepRec
	Status   string
	Tolerate bool // failed under continue_on_error
	Open     bool
	HasCost  bool // some call's cost is known
	itemRows bool // its items' rows show what its result would (group.go)
	// earlier: an earlier run of a visit run again (see anchors), the
	// n of its id's -earlierN; 0 for the last run.
	earlier int32
	// What its markup shows below its line is made when the markup is
	// (Detail), from its record at at.
	at int32
	pg *pageOf // whose step record at it is (Rec holds a part of it)
	x  *stepMore
}

// pageOf is what the views of a page share.
type pageOf struct {
	b     *board.Board
	start time.Time     // the run's
	total time.Duration // the run's length, the timeline's width
	shows func(typ string) engine.Shows
}

// stepMore is the part of a view few steps have.
type stepMore struct {
	calls []callView
	empty []string    // files() patterns of the visit that matched nothing
	cost  float64     // the sum of its calls' (and children's) costs
	kids  []*stepView // the visits it ran (group.go)
	group *groupView  // their summary; nil for a step that ran none
	ask   *answerView // a question's, made with the line: it needs the plan
}

var noMore stepMore

func (s *stepView) more() *stepMore {
	if s.x == nil {
		s.x = &stepMore{}
	}
	return s.x
}

func (s *stepView) rare() *stepMore {
	if s.x == nil {
		return &noMore
	}
	return s.x
}

// stepLine is what a step's markup reads of it, made once each time its
// markup is written: the template reads fields, a method call costing it
// a reflected call each time (30 a step, a tenth of a long report's CPU).
type stepLine struct {
	Rec                               lineRec
	ID, Name, Status, Class, Duration string
	Tolerate, Open, HasCost           bool
	Cost                              float64
	Left, Width                       float64
	Calls                             []callView
	Empty                             []string
	Group                             *groupView
	Kids                              []*stepView
	view                              *stepView
}

// lineRec is the part of the record a step's markup shows.
type lineRec struct {
	Label, Type, Parent, Goto, Error string
	Visit, Attempts                  int
	StartedAt                        time.Time
	Delays                           []int64
}

// Line is what s's markup shows, made now.
func (s *stepView) Line() stepLine {
	m, r := s.rare(), s.Rec.more()
	l := stepLine{
		Rec: lineRec{Label: s.Rec.Label, Type: s.Rec.Type, Parent: s.Rec.Parent, Goto: r.goTo, Error: r.err,
			Visit: s.Rec.Visit(), Attempts: s.Rec.Attempts(), StartedAt: s.Rec.StartedAt(), Delays: r.delays},
		ID: s.ID(), Name: s.Name(), Status: s.Status, Class: s.Class(), Duration: s.Duration(),
		Tolerate: s.Tolerate, Open: s.Open, HasCost: s.HasCost, Cost: m.cost,
		Calls: m.calls, Empty: m.empty, Group: m.group, Kids: m.kids, view: s,
	}
	l.Left, l.Width = s.bar()
	return l
}

// Detail is what the step's markup shows below its line.
func (l stepLine) Detail() *stepDetail { return l.view.Detail() }

// Calls are the visit's model calls.
func (s *stepView) Calls() []callView { return s.rare().calls }

// Empty are the visit's files() patterns that matched nothing.
func (s *stepView) Empty() []string { return s.rare().empty }

// Cost is the sum of the costs known of its calls and children's.
func (s *stepView) Cost() float64 { return s.rare().cost }

// Kids are the visits it ran.
func (s *stepView) Kids() []*stepView { return s.rare().kids }

// Group is its children's summary; nil for a step that ran none.
func (s *stepView) Group() *groupView { return s.rare().group }

// Name is the label, or "label #visit".
func (s *stepView) Name() string { return visitName(s.Rec.Label, s.Rec.Visit()) }

// ID is its element's id (see anchors).
func (s *stepView) ID() string {
	id := "step-" + s.Rec.Label + "-" + strconv.Itoa(s.Rec.Visit())
	if s.earlier > 0 {
		id += "-earlier" + strconv.Itoa(int(s.earlier))
	}
	return id
}

// Left is where its bar starts on the timeline, in % of the run.
func (s *stepView) Left() float64 { l, _ := s.bar(); return l }

// Width is its bar's width, in % of the run.
func (s *stepView) Width() float64 { _, w := s.bar(); return w }

func (s *stepView) bar() (left, width float64) {
	if s.pg == nil {
		return 0, 100
	}
	return bar(s.pg.start, s.pg.total, s.Rec.StartedAt(), s.Rec.FinishedAt())
}

// Class is the CSS class of its status.
func (s *stepView) Class() string {
	if s.Tolerate {
		return "tolerated"
	}
	return s.Status
}

// Duration is how long it ran, as the page says it.
func (s *stepView) Duration() string { return dur(time.Duration(s.Rec.durMS) * time.Millisecond) }

// stepRec is what a step's line and the page's layout read of its
// record; what few records have is in a part of its own.
type stepRec struct {
	Label, Type, Parent string
	visit, attempts     int32 // recMore's when they do not fit
	// Its start and end, in Unix seconds and nanoseconds (UTC: a time
	// is 24 bytes with its place).
	startS, endS   int64
	startNs, endNs int32
	durMS          int64
	x              *recMore
}

type recMore struct {
	goTo, err, agent string
	delays           []int64
	visit, attempts  int
}

func recOf(r *board.StepRecord) stepRec {
	out := stepRec{Label: r.Label, Type: r.Type, Parent: r.Parent, visit: int32(r.Visit), attempts: int32(r.Attempts),
		startS: r.StartedAt.Unix(), startNs: int32(r.StartedAt.Nanosecond()),
		endS: r.FinishedAt.Unix(), endNs: int32(r.FinishedAt.Nanosecond()), durMS: r.DurationMS}
	if r.Goto != "" || r.Error != "" || r.Agent != "" || len(r.Delays) > 0 ||
		int(out.visit) != r.Visit || int(out.attempts) != r.Attempts {
		out.x = &recMore{goTo: r.Goto, err: r.Error, agent: r.Agent, delays: r.Delays, visit: r.Visit, attempts: r.Attempts}
	}
	return out
}

// StartedAt is when it started, in UTC.
func (r stepRec) StartedAt() time.Time { return time.Unix(r.startS, int64(r.startNs)).UTC() }

// FinishedAt is when it ended, in UTC.
func (r stepRec) FinishedAt() time.Time { return time.Unix(r.endS, int64(r.endNs)).UTC() }

func (r stepRec) more() recMore {
	if r.x == nil {
		return recMore{}
	}
	return *r.x
}

// Visit is which visit of its step it is.
func (r stepRec) Visit() int {
	if r.x != nil {
		return r.x.visit
	}
	return int(r.visit)
}

// Attempts is how many times it was tried.
func (r stepRec) Attempts() int {
	if r.x != nil {
		return r.x.attempts
	}
	return int(r.attempts)
}

// Goto is where the step sent the run ("" : on to the next).
func (r stepRec) Goto() string { return r.more().goTo }

// Error is how it failed.
func (r stepRec) Error() string { return r.more().err }

// Agent is the agent that spawned it ("" : the plan ran it).
func (r stepRec) Agent() string { return r.more().agent }

// Delays are its retries' delays in milliseconds.
func (r stepRec) Delays() []int64 { return r.more().delays }

// Spawned is board.StepRecord.Spawned.
func (r stepRec) Spawned() bool { return r.Agent() != "" }

// Package notify tells people about a run: that an input waits for them,
// that the run failed, that it ended. Each of a plan's notify targets is a
// webhook that takes the JSON body of Event, or a Slack-compatible one
// that takes {"text": ...}. Delivery is retried a bounded number of
// times, runs beside the run (it never holds a step up), and carries no
// secret: the body passes through the run's masker. A waiting event may
// carry a single-use link that answers that one input (Link).
//
// It may import the plans, board and sys packages and zerolog; the run
// (internal/runs) calls it, never the other way round.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

// The events.
const (
	EventWaiting = "waiting" // an input (or a tool-call approval) waits for a person
	EventFailed  = "failed"  // the run failed
	EventEnded   = "ended"   // the run ended otherwise: succeeded, canceled, interrupted
)

// Event is the JSON body a webhook target receives.
type Event struct {
	Event  string    `json:"event"`
	Run    string    `json:"run"`
	Plan   string    `json:"plan"`   // the plan's name (its file name when it has none)
	Status string    `json:"status"` // the run's status: waiting, failed, succeeded, ...
	Error  string    `json:"error,omitempty"`
	Board  string    `json:"blackboard"` // the run's blackboard.json on the machine that ran it
	Time   time.Time `json:"time"`
	// Input is what waits (event waiting only).
	Input *Input `json:"input,omitempty"`
}

// Input is the input a waiting event is about.
type Input struct {
	Step      string             `json:"step"` // LABEL or LABEL#VISIT, as runner answer --step takes it
	Prompt    string             `json:"prompt"`
	Tool      *board.WaitingTool `json:"tool,omitempty"`
	Answerers []string           `json:"answerers,omitempty"`
	Deadline  *time.Time         `json:"deadline,omitempty"`
	// Command is the runner answer command line that answers it.
	Command string `json:"answer_command"`
	// Link answers it once, before LinkExpires, without the serve token.
	Link        string     `json:"link,omitempty"`
	LinkExpires *time.Time `json:"link_expires,omitempty"`
}

// Delivery bounds: each attempt's time, the attempts, the first wait
// between them (doubled each time).
var (
	AttemptTimeout = 5 * time.Second
	Attempts       = 3
	Backoff        = 500 * time.Millisecond
)

// Sender delivers a run's events to its plan's targets, each on its own
// goroutine; Wait lets the run's process end once they are done (or a
// bound has passed).
type Sender struct {
	targets []*plans.Notify
	mask    func(string) string
	log     zerolog.Logger
	client  *http.Client
	wg      sync.WaitGroup
}

// New makes the sender of ts; mask hides the run's secrets.
func New(ts []*plans.Notify, mask func(string) string, log zerolog.Logger) *Sender {
	if mask == nil {
		mask = func(s string) string { return s }
	}
	return &Sender{targets: ts, mask: mask, log: log, client: &http.Client{Timeout: AttemptTimeout}}
}

// Wants reports whether any target takes event.
func (s *Sender) Wants(event string) bool {
	for _, t := range s.targets {
		if wants(t, event) {
			return true
		}
	}
	return false
}

// LinkTarget is the first target that sends waiting events with a
// single-use link, or nil.
func (s *Sender) LinkTarget() *plans.Notify {
	for _, t := range s.targets {
		if t.LinkBase != "" && wants(t, EventWaiting) {
			return t
		}
	}
	return nil
}

func wants(t *plans.Notify, event string) bool {
	return len(t.On) == 0 || slices.Contains(t.On, event)
}

// Send delivers ev to every target that takes it, in the background.
func (s *Sender) Send(ev Event) {
	for _, t := range s.targets {
		if !wants(t, ev.Event) {
			continue
		}
		u := t.URL
		if t.URLEnv != "" {
			u = os.Getenv(t.URLEnv)
		}
		if u == "" {
			s.log.Debug().Str("url_env", t.URLEnv).Msg("notify: the URL's variable is not set; nothing sent")
			continue
		}
		tev := ev
		if t.LinkBase == "" && ev.Input != nil && ev.Input.Link != "" {
			in := *ev.Input // the link goes only where a target asked for one
			in.Link, in.LinkExpires = "", nil
			tev.Input = &in
		}
		body, err := Body(t.Format, tev)
		if err != nil {
			s.log.Warn().Err(err).Msg("notify: encoding the event")
			continue
		}
		body = []byte(s.mask(string(body)))
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.deliver(u, body, ev.Event)
		}()
	}
}

// Wait waits for the deliveries under way, at most d; it reports whether
// they all ended.
func (s *Sender) Wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		s.log.Warn().Dur("waited", d).Msg("notify: deliveries still under way are given up")
		return false
	}
}

// deliver posts body, retrying a target that failed for a reason that may
// pass (no answer, 5xx, 408, 429). The URL is never logged (a webhook's
// URL is often its secret): only its host.
func (s *Sender) deliver(u string, body []byte, event string) {
	host := ""
	if pu, err := url.Parse(u); err == nil {
		host = pu.Host
	}
	wait := Backoff
	for attempt := 1; ; attempt++ {
		retry, err := s.post(u, body)
		if err == nil {
			s.log.Debug().Str("event", event).Str("host", host).Int("attempt", attempt).Msg("notify: sent")
			return
		}
		if !retry || attempt >= Attempts {
			s.log.Warn().Str("event", event).Str("host", host).Int("attempts", attempt).Str("error", s.mask(err.Error())).Msg("notify: not delivered")
			return
		}
		time.Sleep(wait)
		wait *= 2
	}
}

func (s *Sender) post(u string, body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("the target's URL: %v", errorWithoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "runner-notify")
	resp, err := s.client.Do(req)
	if err != nil {
		return true, errorWithoutURL(err)
	}
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return false, nil
	case c >= 500 || c == http.StatusRequestTimeout || c == http.StatusTooManyRequests:
		return true, fmt.Errorf("HTTP %d", c)
	default:
		return false, fmt.Errorf("HTTP %d", c)
	}
}

// errorWithoutURL is err without the URL a url.Error names.
func errorWithoutURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// Body is what a target of format (json, slack) receives for ev.
func Body(format string, ev Event) ([]byte, error) {
	if format == "slack" {
		return json.Marshal(map[string]string{"text": Text(ev)})
	}
	return json.Marshal(ev)
}

// Text is ev said in a few lines, for a chat.
func Text(ev Event) string {
	var b strings.Builder
	switch ev.Event {
	case EventWaiting:
		in := ev.Input
		if in.Tool != nil {
			fmt.Fprintf(&b, "runner: run %s (%s) waits for a person to allow agent %s's call of tool %s (input %s).", ev.Run, ev.Plan, in.Tool.Agent, in.Tool.Name, in.Step)
		} else {
			fmt.Fprintf(&b, "runner: run %s (%s) waits for an answer at step %s.", ev.Run, ev.Plan, in.Step)
		}
		fmt.Fprintf(&b, "\n%s", in.Prompt)
		if len(in.Answerers) > 0 {
			fmt.Fprintf(&b, "\nWho may answer: %s.", strings.Join(in.Answerers, ", "))
		}
		if in.Link != "" {
			fmt.Fprintf(&b, "\nAnswer once: %s (until %s)", in.Link, in.LinkExpires.Format(time.RFC3339))
		}
		fmt.Fprintf(&b, "\nOr: %s", in.Command)
	case EventFailed:
		fmt.Fprintf(&b, "runner: run %s (%s) failed", ev.Run, ev.Plan)
		if ev.Error != "" {
			fmt.Fprintf(&b, ": %s", ev.Error)
		}
	default:
		fmt.Fprintf(&b, "runner: run %s (%s) ended: %s", ev.Run, ev.Plan, ev.Status)
	}
	return b.String()
}

package runs

import (
	"fmt"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// The columns of a listed run as `runner runs` prints them, and the run
// list of `runner serve` shows them, so the two never differ.

// StatusText is the run's status, with whether it is live, its engine,
// the hosts its steps ran on, and why it could not be read.
func (r Summary) StatusText() string {
	s := r.Status
	if r.Live {
		s += " (live)"
	}
	for _, b := range r.Batches {
		s += " on batch " + b.ID
		if b.ID == "" {
			s += "being submitted"
		}
	}
	if r.Engine != "" {
		s += " on " + r.Engine
	}
	switch len(r.Hosts) {
	case 0:
	case 1:
		s += " on host " + r.Hosts[0]
	default:
		s += " on hosts " + strings.Join(r.Hosts, ", ")
	}
	if r.Error != "" {
		s += ": " + r.Error
	}
	return s
}

// DurationText is how long the run took, or has run until now; "-" for
// a run that stopped without finishing.
func (r Summary) DurationText(now time.Time) string {
	end := now
	switch {
	case r.EndedAt != nil:
		end = *r.EndedAt
	case !r.Live:
		return "-"
	}
	d := end.Sub(r.StartedAt)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// StepsText is the step visits recorded, and how many failed.
func (r Summary) StepsText() string {
	if r.Failed > 0 {
		return fmt.Sprintf("%d (%d failed)", r.Steps, r.Failed)
	}
	return fmt.Sprint(r.Steps)
}

// CostText is the run's model cost ("+": some model's price is unknown).
func (r Summary) CostText() string {
	u := r.Usage
	if u.Calls == 0 {
		return "-"
	}
	if !u.PriceKnown {
		return board.FormatUSD(u.CostUSD) + "+"
	}
	return board.FormatUSD(u.CostUSD)
}

// TokensText is the tokens the run's model calls used.
func (r Summary) TokensText() string {
	u := r.Usage
	if u.Calls == 0 {
		return "-"
	}
	return fmt.Sprint(u.InputTokens + u.OutputTokens)
}

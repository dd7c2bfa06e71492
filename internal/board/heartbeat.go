package board

import (
	"encoding/json"
	"strings"
	"time"
)

// StaleAfter is how long an agent's signal stays alive after its last
// heartbeat when it says nothing else (no stale_after_s, no TTL).
const StaleAfter = time.Minute

// Heartbeat says whether the agent behind a signal: key is alive: its last
// heartbeat (the value's last_heartbeat, an RFC 3339 time, else when the
// entry was written) is at most its window old. The window is the value's
// stale_after_s, else the entry's TTL, else StaleAfter. ok is false for
// a key that is not a signal.
func Heartbeat(e Entry, now time.Time) (beat time.Time, alive, ok bool) {
	if !strings.HasPrefix(e.Key, "signal:") {
		return time.Time{}, false, false
	}
	beat = e.TS
	window := StaleAfter
	if e.TTL != nil {
		window = time.Duration(*e.TTL * float64(time.Second))
	}
	if m, isMap := e.Content.(map[string]any); isMap {
		if s, _ := m["last_heartbeat"].(string); s != "" {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				beat = t
			}
		}
		if s, isNum := asFloat(m["stale_after_s"]); isNum && s > 0 {
			window = time.Duration(s * float64(time.Second))
		}
	}
	return beat, now.Sub(beat) <= window, true
}

// HeartbeatState is "alive" or "stale" for a signal, "" for another key.
func HeartbeatState(e Entry, now time.Time) string {
	_, alive, ok := Heartbeat(e, now)
	switch {
	case !ok:
		return ""
	case alive:
		return "alive"
	}
	return "stale"
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

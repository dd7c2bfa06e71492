package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// eventLines writes the engine's step events of the console log as the
// display writes its lines, one line each: "! build  attempt 1 failed,
// retrying in 2s: exit status 1" rather than a line of key=value fields
// that wraps on a narrow screen. Other events go on to the console
// writer; JSON logs never come here.
type eventLines struct {
	console io.Writer // zerolog's console writer, for every other event
	out     io.Writer // where the display's lines go
	color   bool
}

func (e eventLines) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte(`"message":"retrying"`)) && !bytes.Contains(p, []byte(`"message":"step finished"`)) {
		return e.console.Write(p)
	}
	var ev struct {
		Message    string `json:"message"`
		Step       string `json:"step"`
		Error      string `json:"error"`
		Status     string `json:"status"`
		Visit      int    `json:"visit"`
		Attempt    int    `json:"attempt"`
		BackoffMS  int64  `json:"backoff_ms"`
		DurationMS int64  `json:"duration_ms"`
		Tolerated  bool   `json:"tolerated"`
	}
	if err := json.Unmarshal(p, &ev); err != nil || ev.Step == "" {
		return e.console.Write(p)
	}
	var line string
	if ev.Message == "retrying" {
		line = fmt.Sprintf("%s %s  attempt %d failed, retrying in %s: %s", e.mark("!", "33"), name(ev.Step, ev.Visit),
			ev.Attempt, ms(ev.BackoffMS), shortError(ev.Error))
	} else {
		status := ev.Status
		if status == "failed" && ev.Tolerated {
			status = "tolerated"
		}
		line = fmt.Sprintf("%s %s  %s", e.mark(marks[status], colors[status]), name(ev.Step, ev.Visit), ms(ev.DurationMS))
		switch status {
		case "canceled", "interrupted":
			line += "  canceled: " + cancelReason(ev.Error)
		case "tolerated":
			line += "  failed (tolerated): " + shortError(ev.Error)
		case "skipped":
			line += "  (skipped)"
		default:
			if ev.Error != "" {
				line += "  " + shortError(ev.Error)
			}
		}
	}
	if _, err := io.WriteString(e.out, line+"\n"); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (e eventLines) mark(mark, code string) string {
	if mark == "" {
		mark = "?"
	}
	if !e.color {
		return mark
	}
	return "\x1b[" + code + "m" + mark + "\x1b[0m"
}

// shortError is an error's first line, cut to what a line can show.
func shortError(err string) string {
	first := firstLine(err)
	if len(first) > 160 {
		first = first[:160] + "…"
	}
	return first
}

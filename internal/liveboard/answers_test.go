package liveboard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
)

// A running step's streamed answer reaches a client of /v1/stream as it
// comes (from its start for a client that asks late), the visit's end
// ends a stream that named it, and nothing of it is written to the file;
// served from the board, which says which visits ended before, or from
// a source that cannot say (the server then notes every end).
func TestStreamAnswer(t *testing.T) {
	for _, fromBoard := range []bool{true, false} {
		t.Run(fmt.Sprintf("from the board %v", fromBoard), func(t *testing.T) { streamAnswer(t, fromBoard) })
	}
}

// byEnds is a Source that cannot say which visits ended.
type byEnds struct{ Source }

func streamAnswer(t *testing.T, fromBoard bool) {
	for _, tc := range []struct {
		name  string
		visit int
		// before: pieces streamed before the client asks; then the rest
		before, after []AnswerChunk
		ends          []int // visits that end after the pieces
		want          []string
		endedBefore   int // a visit that ended before the client asks
	}{
		{"one visit, asked before it streams", 1, nil,
			[]AnswerChunk{{Visit: 1, Call: 1, Text: "Guard the "}, {Visit: 1, Call: 1, Text: "empty slice"}}, []int{1},
			[]string{`1/1 "Guard the "`, `1/1 "empty slice"`, "1 end"}, 0},
		{"asked late: from the start", 1, []AnswerChunk{{Visit: 1, Call: 1, Text: "one "}},
			[]AnswerChunk{{Visit: 1, Call: 2, Text: "two"}}, []int{1},
			[]string{`1/1 "one "`, `1/2 "two"`, "1 end"}, 0},
		{"another visit is not this one's", 2, nil,
			[]AnswerChunk{{Visit: 1, Call: 1, Text: "first"}, {Visit: 2, Call: 1, Text: "second"}}, []int{1, 2},
			[]string{`2/1 "second"`, "2 end"}, 0},
		{"a visit that ended without streaming", 1, nil, nil, []int{1}, []string{"1 end"}, 0},
		{"a visit that ended before it was asked", 2, nil, nil, nil, []string{"2 end"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, s, path := serve(t, t.TempDir(), "blackboard.json")
			if !fromBoard {
				s.Close()
				dir, err := os.MkdirTemp("", "rb")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				if s, err = ServeSource(byEnds{&boardSource{b: b}}, filepath.Join(dir, "s")); err != nil {
					t.Fatal(err)
				}
				defer s.Close()
			}
			// A step's visit ends as a run ends it: recorded, then told.
			end := func(v int) {
				if err := b.FinishStep(board.StepRecord{Label: "fix", Visit: v, Status: "succeeded"}, board.Entry{Section: "steps", Label: "fix"}); err != nil {
					t.Fatal(err)
				}
				s.StepEnded("fix", v)
			}
			for v := 1; v <= tc.endedBefore; v++ {
				end(v)
			}
			for _, c := range tc.before {
				s.Streamed("fix", c.Visit, c.Call, c.Text)
			}
			c, err := Dial(s.Socket, path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			lines := make(chan string, 16)
			done := make(chan error, 1)
			go func() {
				done <- c.StreamAnswer(ctx, "fix", tc.visit, func(ch AnswerChunk) error {
					if ch.Label != "fix" {
						t.Errorf("a chunk of %q", ch.Label)
					}
					if ch.End {
						lines <- itoa(ch.Visit) + " end"
					} else {
						q, _ := json.Marshal(ch.Text)
						lines <- itoa(ch.Visit) + "/" + itoa(ch.Call) + " " + string(q)
					}
					return nil
				})
			}()
			var got []string
			if len(tc.before) > 0 { // what came before is sent at once
				got = append(got, <-lines)
			}
			for _, ch := range tc.after {
				s.Streamed("fix", ch.Visit, ch.Call, ch.Text)
				if ch.Visit == tc.visit { // seen before the step ends
					got = append(got, <-lines)
				}
			}
			for _, v := range tc.ends {
				end(v)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			close(lines)
			for l := range lines {
				got = append(got, l)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			data, _ := os.ReadFile(path)
			if strings.Contains(string(data), "slice") || strings.Contains(string(data), "second") {
				t.Error("a streamed piece is in blackboard.json")
			}
		})
	}
}

// A client following every visit of a step (no visit) sees each one's
// answer and end, and its stream ends with the run.
func TestStreamAnswerEveryVisit(t *testing.T) {
	_, s, path := serve(t, t.TempDir(), "blackboard.json")
	c, err := Dial(s.Socket, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make(chan AnswerChunk, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.StreamAnswer(context.Background(), "fix", 0, func(ch AnswerChunk) error { got <- ch; return nil })
	}()
	for v := 1; v <= 2; v++ {
		s.Streamed("fix", v, 1, "answer "+itoa(v))
		if ch := <-got; ch.Visit != v || ch.Text != "answer "+itoa(v) {
			t.Fatalf("visit %d: %+v", v, ch)
		}
		s.StepEnded("fix", v)
		if ch := <-got; ch.Visit != v || !ch.End {
			t.Fatalf("visit %d's end: %+v", v, ch)
		}
	}
	s.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream outlived the server")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Served from the board, the server notes no end of a step no one
// follows: the board says which visits ended.
func TestEndsOfStepsNotFollowedAreNotKept(t *testing.T) {
	b, s, _ := serve(t, t.TempDir(), "blackboard.json")
	for i := range 100 {
		label := "s" + itoa(i)
		if err := b.FinishStep(board.StepRecord{Label: label, Visit: 1, Status: "succeeded"}, board.Entry{Section: "steps", Label: label}); err != nil {
			t.Fatal(err)
		}
		s.StepEnded(label, 1)
	}
	s.answers.mu.Lock()
	n := len(s.answers.ended)
	s.answers.mu.Unlock()
	if n != 0 {
		t.Errorf("%d ends kept of steps no one follows", n)
	}
}

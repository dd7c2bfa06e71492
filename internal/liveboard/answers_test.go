package liveboard

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A running step's streamed answer reaches a client of /v1/stream as it
// comes (from its start for a client that asks late), the visit's end
// ends a stream that named it, and nothing of it is written to the file.
func TestStreamAnswer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		visit int
		// before: pieces streamed before the client asks; then the rest
		before, after []AnswerChunk
		ends          []int // visits that end after the pieces
		want          []string
	}{
		{"one visit, asked before it streams", 1, nil,
			[]AnswerChunk{{Visit: 1, Call: 1, Text: "Guard the "}, {Visit: 1, Call: 1, Text: "empty slice"}}, []int{1},
			[]string{`1/1 "Guard the "`, `1/1 "empty slice"`, "1 end"}},
		{"asked late: from the start", 1, []AnswerChunk{{Visit: 1, Call: 1, Text: "one "}},
			[]AnswerChunk{{Visit: 1, Call: 2, Text: "two"}}, []int{1},
			[]string{`1/1 "one "`, `1/2 "two"`, "1 end"}},
		{"another visit is not this one's", 2, nil,
			[]AnswerChunk{{Visit: 1, Call: 1, Text: "first"}, {Visit: 2, Call: 1, Text: "second"}}, []int{1, 2},
			[]string{`2/1 "second"`, "2 end"}},
		{"a visit that ended without streaming", 1, nil, nil, []int{1}, []string{"1 end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, s, path := serve(t, t.TempDir(), "blackboard.json")
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
				s.StepEnded("fix", v)
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

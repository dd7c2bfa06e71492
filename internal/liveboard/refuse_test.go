package liveboard

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// badWrites are requests the board must refuse, whoever sends them.
var badWrites = []struct {
	name, body, want string
}{
	{"negative expect_version", `{"key": "k", "value": 1, "expect_version": -5}`, "expect_version -5: want 0 or more"},
	{"expect_version -1", `{"key": "k", "value": 1, "expect_version": -1}`, "expect_version -1: want 0 or more"},
	{"agent runner", `{"key": "k", "value": 1, "agent": "runner"}`, `agent "runner" is reserved for runner itself`},
	{"agent Runner, spaced", `{"key": "k", "value": 1, "agent": " Runner "}`, "is reserved for runner itself"},
	{"agent user", `{"key": "k", "value": 1, "agent": "user"}`, `agent "user" is reserved`},
	{"agent with NUL", `{"key": "k", "value": 1, "agent": "a\u0000b"}`, "agent name: it holds a control character, NUL"},
	{"key with NUL", `{"key": "a\u0000b", "value": 1}`, "the key holds a control character, NUL (U+0000), at byte 1"},
	{"key with newline", `{"key": "a\nb", "value": 1}`, `a newline (\n)`},
	{"key with ESC", `{"key": "\u001b[31mred", "value": 1}`, "ESC (U+001B), at byte 0"},
	{"key with C1 control", `{"key": "a\u0085", "value": 1}`, "U+0085"},
	{"key with bidi override", `{"key": "task\u202e:x", "value": 1}`, "U+202E at byte 4"},
	{"empty key", `{"key": " ", "value": 1}`, "the key is empty"},
	{"topic with NUL", `{"key": "k", "value": 1, "topic": "t\u0000"}`, "topic: it holds a control character"},
}

// The socket refuses every bad write, sent raw (no client-side check),
// and the board is left as it was.
func TestSocketRefusesBadWrites(t *testing.T) {
	b, s, _ := serve(t, t.TempDir(), "blackboard.json")
	if _, err := b.Write(board.WriteOp{Key: "k", Value: 0, Author: "runner", ExpectVersion: -1}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.Socket)
	}}}
	for _, c := range badWrites {
		t.Run(c.name, func(t *testing.T) {
			resp, err := hc.Post("http://board/v1/write", "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var er errorReply
			json.Unmarshal(data, &er)
			if resp.StatusCode < 400 || resp.StatusCode >= 500 || !strings.Contains(er.Error, c.want) {
				t.Errorf("status %d, %s; want a refusal saying %q", resp.StatusCode, data, c.want)
			}
			if b.Len() != 1 {
				t.Fatalf("the board took the write: %d entries", b.Len())
			}
		})
	}
	// Reads as runner are refused too: they would count as runner having
	// seen a version, and hide a conflict.
	resp, err := hc.Get("http://board/v1/read?key=k&agent=runner")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("read as runner: status %d", resp.StatusCode)
	}
}

// On a run no one owns (the CLI writes the file under its lock) the same
// writes are refused.
func TestLocalRefusesBadWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "blackboard.json")
	b, err := board.Create(path, board.Run{ID: "r1"}, board.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	a, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, c := range badWrites {
		var q WriteRequest
		if err := jsonUnmarshal(c.body, &q); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Write(q); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	lb, _ := a.Board()
	if lb.Len() != 0 {
		t.Errorf("the board took %d writes", lb.Len())
	}
	if _, err := os.Stat(board.JournalPath(path)); !os.IsNotExist(err) {
		t.Errorf("a journal was written: %v", err)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

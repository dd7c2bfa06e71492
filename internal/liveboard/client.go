package liveboard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/readlimit"
)

// Client talks to the process serving a live board.
type Client struct {
	Socket string
	Owner  Ping
	http   *http.Client
}

// Dial connects to the board served on sock and checks that it is the
// board of the blackboard file at path.
func Dial(sock, path string) (*Client, error) {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		// A connection per request: a run that stops serving closes the
		// connections it holds, and a request written to one kept idle
		// here fails without saying whether the run read it. A request
		// that must dial again fails to dial when the run is gone, which
		// says it never reached the run (the request is then made on the
		// file: internal/runs). A dial on a unix socket costs tens of µs.
		DisableKeepAlives: true,
	}
	c := &Client{Socket: sock, http: &http.Client{Transport: tr}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.call(ctx, http.MethodGet, "/v1/ping", nil, &c.Owner); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	if !sameFile(c.Owner.Path, path) {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("socket %s serves %s, not %s", sock, c.Owner.Path, path)
	}
	return c, nil
}

// sameFile: a and b name one file; for a run whose blackboard.json is
// not written yet (a run on Temporal, served by a bridge), the same path.
func sameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(fa, fb)
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// Write puts or deletes a key.
func (c *Client) Write(q WriteRequest) (board.Entry, error) {
	if err := q.Check(); err != nil {
		return board.Entry{}, err
	}
	var e board.Entry
	err := c.call(context.Background(), http.MethodPost, "/v1/write", q, &e)
	return e, err
}

// Read reads a key's live entry as agent ("" for no one in particular).
func (c *Client) Read(agent, key string) (board.Entry, bool, error) {
	var rep ReadReply
	err := c.call(context.Background(), http.MethodGet, "/v1/read?"+url.Values{"key": {key}, "agent": {agent}}.Encode(), nil, &rep)
	if err != nil || !rep.Found {
		return board.Entry{}, false, err
	}
	return *rep.Entry, true, nil
}

// Live lists the live entries of the keys starting with prefix.
func (c *Client) Live(prefix, agent string) ([]board.Entry, error) {
	var out []board.Entry
	err := c.call(context.Background(), http.MethodGet, "/v1/live?"+url.Values{"prefix": {prefix}, "agent": {agent}}.Encode(), nil, &out)
	return out, err
}

// Board fetches the whole live board.
func (c *Client) Board() (*board.Board, error) {
	resp, err := c.http.Get("http://board/v1/board")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readlimit.All(resp.Body, "the board served on "+c.Socket, readlimit.Board)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, replyError(resp.StatusCode, data)
	}
	return board.Parse(data)
}

// Watch streams the changes matching f to fn until ctx ends, the owner
// stops serving (the run ended: Watch returns nil), or fn fails.
func (c *Client) Watch(ctx context.Context, f Filter, fn func(Change) error) error {
	v := url.Values{"prefix": {f.Prefix}, "topic": {f.Topic}, "after": {strconv.FormatInt(f.After, 10)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://board/v1/watch?"+v.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := readlimit.All(resp.Body, "the answer of "+c.Socket, readlimit.Small)
		return replyError(resp.StatusCode, data)
	}
	lr := readlimit.NewReader(resp.Body, "a line of the watch from "+c.Socket, readlimit.Board)
	r := bufio.NewReaderSize(lr, 64<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		off += int64(len(line))
		lr.Mark(off) // each line is bounded, not the stream
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var ch Change
			if jerr := json.Unmarshal(line, &ch); jerr != nil {
				return fmt.Errorf("watch: bad line from the owner: %w", jerr)
			}
			if ferr := fn(ch); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // the owner closed the stream: the run ended
		}
	}
}

// StreamAnswer streams the answer label's visit (0: every visit of
// label from now on) is streaming, piece by piece, to fn, until that
// visit ends, the run ends (nil either way), ctx ends or fn fails.
func (c *Client) StreamAnswer(ctx context.Context, label string, visit int, fn func(AnswerChunk) error) error {
	v := url.Values{"label": {label}}
	if visit > 0 {
		v.Set("visit", strconv.Itoa(visit))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://board/v1/stream?"+v.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := readlimit.All(resp.Body, "the answer of "+c.Socket, readlimit.Small)
		return replyError(resp.StatusCode, data)
	}
	lr := readlimit.NewReader(resp.Body, "a line of the stream from "+c.Socket, readlimit.Answer+(64<<10))
	r := bufio.NewReaderSize(lr, 64<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		off += int64(len(line))
		lr.Mark(off)
		if len(line) > 0 && line[len(line)-1] == '\n' {
			var ch AnswerChunk
			if jerr := json.Unmarshal(line, &ch); jerr != nil {
				return fmt.Errorf("stream: bad line from the owner: %w", jerr)
			}
			if ferr := fn(ch); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}
	}
}

// Answer records a person's answer to an input step the run waits at.
func (c *Client) Answer(a board.Answer) (AnswerReply, error) {
	var rep AnswerReply
	err := c.call(context.Background(), http.MethodPost, "/v1/answer", a, &rep)
	return rep, err
}

// Close releases the client's connections.
func (c *Client) Close() error {
	c.http.CloseIdleConnections()
	return nil
}

func (c *Client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://board"+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// A live entry holds at most a write's worth; a list of them, up to a
	// board's.
	data, err := readlimit.All(resp.Body, "the answer of "+c.Socket, readlimit.Board)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return replyError(resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// replyError turns an error reply back into an error that errors.Is
// matches against the board's sentinels.
func replyError(code int, data []byte) error {
	var er errorReply
	if json.Unmarshal(data, &er) != nil || er.Error == "" {
		return fmt.Errorf("board owner answered %d: %s", code, bytes.TrimSpace(data))
	}
	return ErrorOf(er.Kind, er.Error)
}

type remoteError struct {
	msg string
	is  error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.is }

// Unreachable reports whether err is a call that did not reach the board's
// owner, or lost it before its reply: the owner stopped serving (it is
// ending), not an answer of its own.
func Unreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

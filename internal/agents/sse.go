package agents

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// sseEvent is one server-sent event: its type ("" when the server sent no
// `event:` line) and its data lines joined by newlines.
type sseEvent struct {
	Type string
	Data string
}

// readSSE reads server-sent events from r (the WHATWG event-stream
// format: `event:` and `data:` fields, a blank line ends an event, `:`
// starts a comment) and hands each to fn until r ends or fn fails. An
// event the stream ends in the middle of is not dispatched.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	br := bufio.NewReaderSize(r, 32<<10)
	var ev sseEvent
	var data strings.Builder
	has := false
	for {
		line, err := br.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			if err == io.EOF {
				return nil
			}
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if has {
				ev.Data = data.String()
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, has = sseEvent{}, false
			data.Reset()
			continue
		}
		if err == io.EOF {
			return nil // a last line without its blank line: the stream was cut there
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Type, has = value, true
		case "data":
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			has = true
		}
	}
}

// errStalled is the cause of a stream cancelled for its silence.
var errStalled = errors.New("the stream stalled")

// errStreamCut is a stream that ended before the event that says the
// answer is complete: a broken connection or a proxy's cut, retried.
var errStreamCut = errors.New("the stream ended before the answer was complete")

// streamError is an error the server sent inside a stream, after its 200
// status. Retryable says whether asking again may help (a server error,
// an overload, a rate limit), else the request itself is at fault.
type streamError struct {
	api       *APIError
	retryable bool
}

func (e *streamError) Error() string { return e.api.Error() + " (sent in the stream)" }

func (e *streamError) Unwrap() error { return e.api }

// idleReader re-arms the call's idle timer on every read that brings data,
// and counts what it read.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
	n     atomic.Int64
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
		r.n.Add(int64(n))
	}
	return n, err
}

// onceStream is once for a streamed answer: the agent's timeout bounds
// each wait for data (the response headers, then every read of the body),
// not the whole answer.
func (t *transport) onceStream(ctx context.Context, x *exchange) ([]byte, int, http.Header, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(x.timeout, func() { cancel(errStalled) })
	defer idle.Stop()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, x.url, bytes.NewReader(x.body))
	if err != nil {
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
	}
	req.Header = x.header.Clone()
	fail := func(err error, status int, read int64) ([]byte, int, http.Header, error) {
		switch {
		case ctx.Err() != nil:
			return nil, 0, nil, &fatalError{fmt.Errorf("%s: %w", x.provider, context.Cause(ctx))}
		case errors.Is(context.Cause(actx), errStalled):
			waited := "answer (no response headers)"
			if status != 0 {
				waited = fmt.Sprintf("data in the answer's stream (status %d, stalled after %d bytes)", status, read)
			}
			return nil, 0, nil, &fatalError{fmt.Errorf("%s (%s): no %s within %s (the agent's timeout, which bounds each wait of a stream: agents.%s.timeout)",
				x.provider, x.mask.String(peerURL(x.url)), waited, x.timeout, x.agent)}
		case permanentTransportError(err):
			return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
		}
		var se *streamError
		if errors.As(err, &se) && !se.retryable {
			return nil, 0, nil, &fatalError{se}
		}
		return nil, 0, nil, fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return fail(err, 0, 0)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// An error answer is JSON, not a stream.
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxAnswer)+1))
		if err != nil {
			return fail(err, resp.StatusCode, int64(len(body)))
		}
		return body, resp.StatusCode, resp.Header, nil
	}
	r := &idleReader{r: io.LimitReader(resp.Body, int64(maxAnswer)+1), timer: idle, idle: x.timeout}
	out, err := x.stream(r)
	if r.n.Load() > int64(maxAnswer) {
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: the answer is larger than %d MiB, the most runner reads (status %d)", x.provider, maxAnswer>>20, resp.StatusCode)}
	}
	if err != nil {
		return fail(err, resp.StatusCode, r.n.Load())
	}
	x.streamed = out
	return nil, resp.StatusCode, resp.Header, nil
}

package agents

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/rs/zerolog"
)

// Retry says how failed model calls are retried: on connection errors and
// on 408, 409, 429, 5xx and 529 answers, with exponential backoff and
// jitter, or after the server's Retry-After when it sends one.
type Retry struct {
	Max           int           // retries after the first attempt; 0: DefaultRetry.Max; <0: none
	Backoff       time.Duration // first backoff; 0: DefaultRetry.Backoff
	MaxBackoff    time.Duration // cap of the exponential backoff; 0: DefaultRetry.MaxBackoff
	MaxRetryAfter time.Duration // cap on a server's Retry-After; 0: DefaultRetry.MaxRetryAfter
}

// DefaultRetry is the retry policy when Options.Retry leaves a field zero.
var DefaultRetry = Retry{Max: 5, Backoff: time.Second, MaxBackoff: 30 * time.Second, MaxRetryAfter: 2 * time.Minute}

func (r Retry) withDefaults() Retry {
	if r.Max == 0 {
		r.Max = DefaultRetry.Max
	}
	if r.Max < 0 {
		r.Max = 0
	}
	if r.Backoff <= 0 {
		r.Backoff = DefaultRetry.Backoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultRetry.MaxBackoff
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = DefaultRetry.MaxRetryAfter
	}
	return r
}

// maxAnswer bounds how much of an answer is read: far above any real
// completion, low enough that a misbehaving server cannot exhaust memory.
var maxAnswer = 64 << 20 // a var so tests can lower it

// transport sends provider requests with retries. It is shared by the
// providers of a Set.
type transport struct {
	client *http.Client
	retry  Retry
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func() float64
}

// exchange is one request a provider wants made.
type exchange struct {
	provider string // for messages: openai, anthropic
	method   string // "": POST
	log      zerolog.Logger
	url      string
	header   http.Header
	body     []byte
	timeout  time.Duration // per attempt
	agent    string        // whose timeout it is, for the error that names the setting
	// mask knows the API key (and the run's other secrets): every body the
	// server sends and every error text is masked whole before anything
	// reads, cuts or keeps it, so no field a server echoes the key in (a
	// message, a type, a code, a header copied into the body) can leak it.
	mask *mask.Masker
	// apiError turns a non-2xx answer into an error.
	apiError func(status int, body []byte) *APIError
	// stream, when set, reads a 2xx answer sent as server-sent events and
	// returns it whole, as the provider's non-streaming answer would be,
	// or, for an error event, that error's body and the status it stands
	// for. A stream that ends early is an error (retried): nothing of it
	// is kept. timeout is then the longest the stream may stay silent.
	stream func(r io.Reader) (body []byte, status int, err error)
	// beforeRetry, when set, runs before each retry of a call that may
	// have done its work without the answer arriving (a batch's create):
	// a body it returns is taken as the answer, and an error stops the
	// retries, since retrying blind could do the work twice.
	beforeRetry func(ctx context.Context) ([]byte, error)
}

// post sends x and returns the body of its 2xx answer and the number of
// retries made (also when it fails).
func (t *transport) post(ctx context.Context, x *exchange) ([]byte, int, error) {
	for attempt := 0; ; attempt++ {
		body, status, header, err := t.once(ctx, x)
		body = x.mask.Bytes(body)
		if err == nil && status/100 == 2 {
			return body, attempt, nil
		}
		var apiErr *APIError
		if err == nil {
			apiErr = x.apiError(status, body)
			err = apiErr
		}
		var fatal *fatalError
		switch {
		case errors.As(err, &fatal):
			return nil, attempt, fatal.err
		case apiErr != nil && !retryableStatus(status):
			return nil, attempt, apiErr
		case attempt >= t.retry.Max:
			if apiErr != nil {
				apiErr.Retries = attempt
				return nil, attempt, apiErr
			}
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d retries)", err, attempt)
			}
			return nil, attempt, err
		}
		wait := t.backoff(attempt, header, x)
		x.log.Warn().Str("provider", x.provider).
			Int("status", status).Str("error", err.Error()).Int("retry", attempt+1).Int("max_retries", t.retry.Max).
			Int64("wait_ms", wait.Milliseconds()).Msg("model call failed, retrying")
		if err := t.sleep(ctx, wait); err != nil {
			return nil, attempt, fmt.Errorf("%s: %w", x.provider, err)
		}
		if x.beforeRetry != nil {
			found, ferr := x.beforeRetry(ctx)
			if ferr != nil {
				return nil, attempt, fmt.Errorf("%w; not retried, since looking for what it may have made failed: %w", err, ferr)
			}
			if found != nil {
				return found, attempt, nil
			}
		}
	}
}

// fatalError wraps a transport failure that retrying cannot fix.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// once makes one attempt. A retryable failure is returned as a plain error
// (or a status with its body); one that is not, as a *fatalError.
func (t *transport) once(ctx context.Context, x *exchange) ([]byte, int, http.Header, error) {
	if x.stream != nil {
		return t.onceStream(ctx, x)
	}
	actx, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	method := x.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(actx, method, x.url, bytes.NewReader(x.body))
	if err != nil {
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
	}
	req.Header = x.header.Clone()
	// What a silent server kept us waiting for: its answer's headers
	// (connecting included), or the rest of its body.
	waited := "answer (no response headers)"
	var body []byte
	resp, err := t.client.Do(req)
	if err == nil {
		waited = fmt.Sprintf("answer's body (status %d, headers received)", resp.StatusCode)
		body, err = io.ReadAll(io.LimitReader(resp.Body, int64(maxAnswer)+1))
		resp.Body.Close()
		if err == nil && len(body) > maxAnswer {
			return nil, 0, nil, &fatalError{fmt.Errorf("%s: the answer is larger than %d MiB, the most runner reads (status %d)", x.provider, maxAnswer>>20, resp.StatusCode)}
		}
		if err == nil {
			return body, resp.StatusCode, resp.Header, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		// The step or the run was cancelled: no retry, and say why.
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %w", x.provider, context.Cause(ctx))}
	case actx.Err() != nil:
		// A call past the agent's timeout is not retried: a model too slow
		// once is likely too slow again, and retrying would multiply the
		// wait. Raise `timeout` or give the step a `retry`.
		// The error names the server, what it left unanswered and the
		// setting that raises the bound.
		if len(body) > 0 {
			waited = fmt.Sprintf("answer's body (status %d, stalled after %d bytes)", resp.StatusCode, len(body))
		}
		return nil, 0, nil, &fatalError{fmt.Errorf("%s (%s): no complete %s within %s (the agent's timeout: agents.%s.timeout)",
			x.provider, x.mask.String(peerURL(x.url)), waited, x.timeout, x.agent)}
	case permanentTransportError(err):
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
	}
	return nil, 0, nil, fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))
}

// onceStream is once for a streamed answer: the agent's timeout bounds
// each silence (the wait for headers, then between reads), not the whole
// answer, which may take long while it keeps coming.
func (t *transport) onceStream(ctx context.Context, x *exchange) ([]byte, int, http.Header, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stalled atomic.Bool
	idle := time.AfterFunc(x.timeout, func() { stalled.Store(true); cancel() })
	defer idle.Stop()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, x.url, bytes.NewReader(x.body))
	if err != nil {
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
	}
	req.Header = x.header.Clone()
	waited := "answer (no response headers)"
	resp, err := t.client.Do(req)
	var body []byte
	status := 0
	read := &idleReader{r: nil, idle: idle, d: x.timeout}
	if err == nil {
		defer resp.Body.Close()
		read.r = io.LimitReader(resp.Body, int64(maxAnswer)+1)
		idle.Reset(x.timeout)
		status = resp.StatusCode
		waited = fmt.Sprintf("answer's stream (status %d, headers received)", status)
		if status/100 != 2 {
			body, err = io.ReadAll(read)
		} else {
			var st int
			if body, st, err = x.stream(read); err == nil {
				status = st
			}
		}
		if read.n > int64(maxAnswer) {
			return nil, 0, nil, &fatalError{fmt.Errorf("%s: the answer is larger than %d MiB, the most runner reads (status %d)", x.provider, maxAnswer>>20, resp.StatusCode)}
		}
		if err == nil {
			return body, status, resp.Header, nil
		}
	}
	switch {
	case ctx.Err() != nil:
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %w", x.provider, context.Cause(ctx))}
	case stalled.Load():
		if read.n > 0 {
			waited = fmt.Sprintf("answer's stream (status %d, stalled after %d bytes)", status, read.n)
		}
		return nil, 0, nil, &fatalError{fmt.Errorf("%s (%s): nothing more of the %s for %s (the agent's timeout, the longest a stream may stay silent: agents.%s.timeout)",
			x.provider, x.mask.String(peerURL(x.url)), waited, x.timeout, x.agent)}
	case permanentTransportError(err):
		return nil, 0, nil, &fatalError{fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))}
	}
	if read.n > 0 {
		return nil, 0, nil, fmt.Errorf("%s: the answer's stream broke after %d bytes: %s", x.provider, read.n, x.mask.String(err.Error()))
	}
	return nil, 0, nil, fmt.Errorf("%s: %s", x.provider, x.mask.String(err.Error()))
}

// idleReader pushes the idle deadline back on every read that brings
// bytes, and counts them.
type idleReader struct {
	r    io.Reader
	idle *time.Timer
	d    time.Duration
	n    int64
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.n += int64(n)
		r.idle.Reset(r.d)
	}
	return n, err
}

// peerURL is u without its query, which may hold a key.
func peerURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		return u[:i]
	}
	return u
}

// permanentTransportError reports failures a retry cannot fix: a server
// whose certificate does not verify.
func permanentTransportError(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) || errors.As(err, &verify)
}

// retryableStatus: timeouts, conflicts, rate limits, server errors and
// Anthropic's 529 overloaded.
func retryableStatus(status int) bool {
	return status == 408 || status == 409 || status == 429 || status >= 500
}

// backoff is the wait before retry number attempt+1: the server's
// Retry-After when it gives one, else exponential with jitter. A server's
// wait is clamped to the agent's timeout and to Retry.MaxRetryAfter
// (logged): a server asking for an hour does not hold the run for an hour
// per retry.
func (t *transport) backoff(attempt int, h http.Header, x *exchange) time.Duration {
	limit := t.retry.MaxRetryAfter
	if x.timeout > 0 {
		limit = min(limit, x.timeout)
	}
	if d, asked, ok := retryAfter(h, time.Now(), limit); ok {
		if d < asked {
			x.log.Warn().Str("provider", x.provider).Int64("asked_ms", asked.Milliseconds()).Int64("wait_ms", d.Milliseconds()).
				Msg("the server's Retry-After is longer than runner waits; clamped")
		}
		return d
	}
	d := float64(t.retry.Backoff) * math.Pow(2, float64(attempt))
	d = min(d, float64(t.retry.MaxBackoff))
	// Half fixed, half random, so parallel steps hitting the same rate
	// limit spread out.
	return time.Duration(d/2 + t.jitter()*d/2)
}

// retryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date): the wait, clamped to limit, and what the server asked for
// (also clamped, to a day, so it fits a Duration). Values that are not a
// number or a date, negative or NaN, are ignored; a date in the past is no
// wait.
func retryAfter(h http.Header, now time.Time, limit time.Duration) (wait, asked time.Duration, ok bool) {
	if h == nil {
		return 0, 0, false
	}
	const day = 24 * time.Hour
	clamp := func(seconds float64) (time.Duration, time.Duration, bool) {
		if math.IsNaN(seconds) || seconds < 0 {
			return 0, 0, false
		}
		// Compare as floats: 1e300 seconds overflows a Duration.
		asked := day
		if seconds < day.Seconds() {
			asked = time.Duration(seconds * float64(time.Second))
		}
		return min(asked, limit), asked, true
	}
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			if w, a, ok := clamp(ms / 1000); ok {
				return w, a, true
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clamp(s)
	}
	if at, err := http.ParseTime(v); err == nil {
		return clamp(max(at.Sub(now).Seconds(), 0))
	}
	return 0, 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

var defaultJitter = rand.Float64

// errorBody is the text of an error answer that is not the provider's JSON
// shape (a proxy's HTML page...): short, on one line.
func errorBody(status int, body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		s = http.StatusText(status)
	}
	return s
}

package codingagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/agents"
)

// maxRecorded bounds the bytes of one answer the proxy keeps for its
// record and its metering; the CLI gets the whole answer all the same.
const maxRecorded = 16 << 20

// Exchange is one request the CLI made through the proxy and its answer.
type Exchange struct {
	N        int             `json:"n"` // 1, 2, ... in the order the answers ended
	Method   string          `json:"method"`
	Path     string          `json:"path"`
	Request  json.RawMessage `json:"request,omitempty"` // the body, when JSON
	Status   int             `json:"status"`
	Response string          `json:"response"` // the body as the CLI got it (SSE text or JSON)
	Model    string          `json:"model,omitempty"`
	Usage    agents.Usage    `json:"usage"`
	// CostUSD is what the answer cost at the agent's price, Priced that
	// the price was known (set by the step as it meters the answer), so
	// a reader of the saved run needs no plan to count it.
	CostUSD float64 `json:"cost_usd,omitempty"`
	Priced  bool    `json:"priced,omitempty"`
	Error   string  `json:"error,omitempty"` // the upstream could not be reached
}

// Auth is how the API wants its key.
type Auth int

const (
	// AuthAPIKey: an x-api-key header (Anthropic).
	AuthAPIKey Auth = iota
	// AuthBearer: Authorization: Bearer (OpenAI).
	AuthBearer
)

// Proxy is a local HTTP listener that forwards a CLI's model requests to
// the real API. The CLI is given Token as its key, never the real one:
// the proxy checks it and sends Key upstream, so the key stays in runner
// and a process that is not the CLI cannot spend through the proxy.
type Proxy struct {
	Upstream string // the API's base URL, without a trailing slash
	Key      string // the real key ("" sends none)
	Auth     Auth
	Client   *http.Client
	// Meter is told each exchange when its answer has ended; an error
	// (a limit crossed) makes the proxy refuse every later request, and
	// is what Err returns.
	Meter func(Exchange) error

	token string
	ln    net.Listener
	srv   *http.Server

	mu      sync.Mutex
	n       int
	stopped error
}

// NewToken is a random key for a CLI to send the proxy.
func NewToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "runner-" + hex.EncodeToString(b)
}

// Start listens on a loopback port; the CLI is pointed at URL() and sends
// token as its key.
func (p *Proxy) Start(token string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("model proxy: %w", err)
	}
	p.token, p.ln = token, ln
	if p.Client == nil {
		p.Client = &http.Client{}
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go p.srv.Serve(ln)
	return nil
}

// Token is the key the CLI must send.
func (p *Proxy) Token() string { return p.token }

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the base URL the CLI is given.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Close stops the listener and any exchange under way.
func (p *Proxy) Close() error {
	if p.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		return p.srv.Close()
	}
	return nil
}

// Err is the Meter's error that stopped the proxy, or nil.
func (p *Proxy) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

func (p *Proxy) authorized(r *http.Request) bool {
	got := r.Header.Get("x-api-key")
	if a := r.Header.Get("Authorization"); got == "" && strings.HasPrefix(a, "Bearer ") {
		got = strings.TrimPrefix(a, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(p.token)) == 1
}

// hopHeaders are not forwarded: the key the CLI holds is replaced, and
// the body is asked for uncompressed so that the proxy can read it.
var hopHeaders = map[string]bool{"X-Api-Key": true, "Authorization": true, "Host": true, "Content-Length": true,
	"Accept-Encoding": true, "Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Te": true, "Trailer": true,
	"Transfer-Encoding": true, "Upgrade": true}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.authorized(r) {
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"runner's model proxy: wrong key"}}`, http.StatusUnauthorized)
		return
	}
	if err := p.Err(); err != nil {
		writeRefusal(w, err)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ex := Exchange{Method: r.Method, Path: r.URL.Path}
	if json.Valid(body) {
		ex.Request = body
		var m struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &m)
		ex.Model = m.Model
	}
	// The CLI's path goes after the agent's base URL: Claude Code asks
	// /v1/messages of a host, Codex /responses of a base that has its /v1.
	target := strings.TrimRight(p.Upstream, "/") + r.URL.Path
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	up, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, vs := range r.Header {
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			up.Header[k] = vs
		}
	}
	if p.Key != "" {
		if p.Auth == AuthBearer {
			up.Header.Set("Authorization", "Bearer "+p.Key)
		} else {
			up.Header.Set("x-api-key", p.Key)
		}
	}
	resp, err := p.Client.Do(up)
	if err != nil {
		ex.Error = scrub(err.Error(), p.Key)
		p.finish(ex)
		http.Error(w, ex.Error, http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if !hopHeaders[http.CanonicalHeaderKey(k)] {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	ex.Status = resp.StatusCode
	var kept bytes.Buffer
	fl, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if kept.Len() < maxRecorded {
				kept.Write(buf[:min(n, maxRecorded-kept.Len())])
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				break
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if rerr != nil {
			break
		}
	}
	ex.Response = kept.String()
	if u, model, ok := ParseUsage(kept.Bytes()); ok {
		ex.Usage = u
		if model != "" {
			ex.Model = model
		}
	}
	p.finish(ex)
}

// finish numbers an exchange and meters it.
func (p *Proxy) finish(ex Exchange) {
	p.mu.Lock()
	p.n++
	ex.N = p.n
	meter := p.Meter
	p.mu.Unlock()
	if meter == nil {
		return
	}
	if err := meter(ex); err != nil {
		p.mu.Lock()
		if p.stopped == nil {
			p.stopped = err
		}
		p.mu.Unlock()
	}
}

// writeRefusal answers a request made after a limit was crossed with an
// error the CLI reports and does not retry.
func writeRefusal(w http.ResponseWriter, err error) {
	msg, _ := json.Marshal(err.Error())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%s}}`, msg)
}

// scrub removes the key from an error text (a URL may carry it).
func scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "***")
}

// ParseUsage reads the usage an answer reports: a streamed one (Anthropic
// Messages SSE: message_start and message_delta; OpenAI Responses SSE:
// response.completed) or a whole JSON one. InputTokens counts cached and
// cache-write tokens too, as agents.Usage does.
func ParseUsage(body []byte) (agents.Usage, string, bool) {
	trim := bytes.TrimSpace(body)
	if len(trim) > 0 && trim[0] == '{' {
		return usageOf(trim)
	}
	var u agents.Usage
	model, found := "", false
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), maxRecorded)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("data:")) {
			continue
		}
		data := bytes.TrimSpace(line[len("data:"):])
		var ev struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
			Usage   *wireUsage      `json:"usage"`
			Resp    json.RawMessage `json:"response"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "message_start":
			if mu, m, ok := usageOf(ev.Message); ok {
				u, model, found = mu, m, true
			}
		case "message_delta":
			if ev.Usage != nil {
				// Cumulative: the answer's output so far.
				u.OutputTokens = ev.Usage.OutputTokens
				found = true
			}
		case "response.completed", "response.incomplete", "response.failed":
			if ru, m, ok := usageOf(ev.Resp); ok {
				u, model, found = ru, m, true
			}
		}
	}
	return u, model, found
}

// wireUsage is the usage object of both APIs.
type wireUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	InputDetails             *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

func usageOf(raw json.RawMessage) (agents.Usage, string, bool) {
	var m struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Usage == nil {
		return agents.Usage{}, "", false
	}
	w := m.Usage
	u := agents.Usage{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens}
	if w.InputDetails != nil { // Responses: input_tokens counts the cached ones
		u.CacheReadInputTokens = w.InputDetails.CachedTokens
	} else { // Messages: input_tokens does not
		u.CacheReadInputTokens, u.CacheCreationInputTokens = w.CacheReadInputTokens, w.CacheCreationInputTokens
		u.InputTokens += w.CacheReadInputTokens + w.CacheCreationInputTokens
	}
	if w.OutputDetails != nil {
		u.ReasoningTokens = w.OutputDetails.ReasoningTokens
	}
	return u, m.Model, true
}

// ErrLimit is wrapped by the Meter's errors for a crossed limit.
var ErrLimit = errors.New("limit crossed")

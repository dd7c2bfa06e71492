// Package mcp is runner's client side of the Model Context Protocol: it
// starts an MCP server (a command speaking stdio, or a streamable HTTP
// endpoint), lists its tools and calls them. It is a thin layer over the
// official Go SDK (github.com/modelcontextprotocol/go-sdk) that adds what
// a run needs around it: a server's process group ends with the run even
// when the server ignores SIGTERM, its stderr goes to the run's log (never
// to runner's own stderr), a server that died is an error that says so
// with the end of its stderr, and results come back as plain text.
// A streamable HTTP stream that ends before its answer is resumed (GET
// with Last-Event-ID, after the server's retry delay) within the call's
// bound, and a server's elicitation during a tool call goes to the
// caller's ElicitFunc (see Elicitation).
//
// Recording and replaying calls is the agents package's business; this
// one only talks to servers. It imports nothing of runner's.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// Server says how to reach one MCP server.
type Server struct {
	Name    string
	Command []string          // stdio: the program and its arguments
	Env     map[string]string // stdio: the server's whole environment beside PATH, HOME, LANG and TMPDIR
	Dir     string            // stdio: its working directory ("" : runner's)
	URL     string            // streamable HTTP endpoint
	Headers map[string]string // HTTP: headers sent with every request
	// Mask hides secrets in the server's stderr before it is logged.
	Mask func(string) string
	// StartTimeout bounds starting the server (initialize) and listing
	// its tools; CallTimeout bounds one tool call. Zero: the defaults.
	StartTimeout time.Duration
	CallTimeout  time.Duration
	// Setting names where the plan sets the server (e.g.
	// "agents.coder.mcp.files"), so that the error of a silent server
	// says which setting to raise.
	Setting string
}

// Default bounds of a server that sets none: long enough for npx to
// fetch a package on a slow network, and for a tool that does real work.
const (
	DefaultStartTimeout = time.Minute
	DefaultCallTimeout  = 5 * time.Minute
)

// ErrNoAnswer wraps the error of a server that did not answer within
// its bound: a failure of the step (the server is ended), not an answer
// for the model.
var ErrNoAnswer = errors.New("MCP server did not answer")

// noAnswerError says which server did not answer what within which
// bound, and the setting that raises it.
type noAnswerError struct {
	srv     Server
	what    string
	limit   time.Duration
	setting string
}

func (e *noAnswerError) Error() string {
	return fmt.Sprintf("mcp server %q (%s): no answer to %s within %s (%s)", e.srv.Name, e.srv.peer(), e.what, e.limit, e.setting)
}

func (e *noAnswerError) Unwrap() error { return ErrNoAnswer }

// peer describes the server for an error: its command (cut short) or
// its URL, never its env or headers (which hold secrets).
func (s Server) peer() string {
	if len(s.Command) > 0 {
		c := strings.Join(s.Command, " ")
		if len(c) > 60 {
			c = c[:57] + "..."
		}
		return c
	}
	return s.URL
}

func (s Server) startTimeout() time.Duration {
	if s.StartTimeout > 0 {
		return s.StartTimeout
	}
	return DefaultStartTimeout
}

func (s Server) callTimeout() time.Duration {
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return DefaultCallTimeout
}

func (s Server) setting(field string) string {
	if s.Setting == "" {
		return field
	}
	return s.Setting + "." + field
}

// errSilent is the cause of a context that bounded a wait on a server.
var errSilent = errors.New("MCP server silent")

// bounded runs f under limit. A server that does not answer within it
// is ended (its state is unknown, and its process group must not
// outlive the wait) and f's error becomes a noAnswerError.
func (c *Conn) bounded(ctx context.Context, what, field string, limit time.Duration, f func(context.Context) error) error {
	bctx, cancel := context.WithTimeoutCause(ctx, limit, errSilent)
	defer cancel()
	err := f(bctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(bctx), errSilent) {
		c.killGroup() // no grace: it has had its time
		c.Close()
		return &noAnswerError{srv: c.srv, what: what, limit: limit, setting: c.srv.setting(field)}
	}
	return err
}

// Tool is one tool a server offers.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Result is what a tool call returned: its content as text (text parts
// joined by newlines, other parts described), and whether the tool said it
// failed.
type Result struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

// Conn is a connection to a started server.
type Conn struct {
	srv     Server
	log     zerolog.Logger
	session *sdk.ClientSession
	cmd     *exec.Cmd
	stderr  *tail
	// stderrDone is closed when the server's stderr has ended.
	stderrDone chan struct{}

	closeOnce sync.Once
	closeErr  error

	mu    sync.Mutex
	calls map[*call]bool // the tool calls in flight
}

// call is one tool call in flight, which a server's elicitation during
// it goes to.
type call struct {
	tool   string
	elicit ElicitFunc
	ctx    context.Context // the call's, with its bound
	cancel context.CancelFunc
	// stopped is the error of an elicit that stopped the call; notes
	// are what runner told the server instead of a person's answer.
	stopped error
	notes   []string
}

// ErrServerGone wraps the error of a call to a server that is no longer
// there (its process ended, its connection closed): a failure of the
// step, not an answer for the model.
var ErrServerGone = errors.New("MCP server gone")

// killGrace is how long a server has to exit after its stdin closes,
// and again after SIGTERM, before its process group is killed.
const killGrace = 2 * time.Second

// Start starts (stdio) or connects to (HTTP) a server and initializes the
// session. ctx bounds the start only, and so does srv's StartTimeout.
func Start(ctx context.Context, srv Server, log zerolog.Logger) (*Conn, error) {
	c := &Conn{srv: srv, log: log.With().Str("mcp_server", srv.Name).Logger()}
	client := c.client()
	var t sdk.Transport
	switch {
	case len(srv.Command) > 0:
		cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
		cmd.Env = serverEnv(srv.Env)
		cmd.Dir = srv.Dir
		// Its own process group, so that ending it ends whatever it
		// started too (npx starts node, which may start more).
		ownGroup(cmd)
		c.stderr = &tail{log: log.With().Str("mcp_server", srv.Name).Logger(), mask: srv.Mask}
		// A pipe of our own rather than exec's copying goroutine: its
		// end tells when the server (and all it started) has let go of
		// stderr, so the error that says it died can wait for its last
		// words (they came after the EOF on stdout that said it died).
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: %v", srv.Name, err)
		}
		defer pw.Close() // the server holds its own copy once started
		c.stderrDone = make(chan struct{})
		go func() {
			_, _ = io.Copy(c.stderr, pr)
			pr.Close()
			close(c.stderrDone)
		}()
		cmd.Stderr = pw
		c.cmd = cmd
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: killGrace}
	case srv.URL != "":
		hc := &http.Client{Transport: headerTransport{headers: srv.Headers, base: http.DefaultTransport}}
		// The standalone SSE stream is open: a server may send what it
		// asks a person during a call there rather than on the call's
		// own stream (the TypeScript SDK's servers do). What else comes
		// on it (a tool list that changed) is ignored: a replay could not
		// follow it. A call's stream that ends before its answer (a proxy's idle
		// cut, a server that polls) is resumed as the transport says:
		// GET with Last-Event-ID after the server's retry delay, a few
		// times without progress at most; the call's bound (CallTimeout)
		// bounds every wait in it.
		t = &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: reconnects}
	default:
		return nil, fmt.Errorf("MCP server %s has neither a command nor a url", srv.Name)
	}
	var s *sdk.ClientSession
	err := c.bounded(ctx, "initialize", "start_timeout", srv.startTimeout(), func(ctx context.Context) error {
		var err error
		s, err = client.Connect(ctx, t, nil)
		return err
	})
	if errors.Is(err, ErrNoAnswer) {
		return nil, fmt.Errorf("%w%s", err, c.lastStderr())
	}
	if err != nil {
		c.killGroup()
		return nil, fmt.Errorf("MCP server %s did not start: %v%s", srv.Name, err, c.lastStderrAfterExit())
	}
	c.session = s
	return c, nil
}

// reconnects is how many times in a row a call's stream is resumed
// without the server sending anything new.
const reconnects = 5

// client is the SDK client of c: it answers elicitations (see elicit).
func (c *Conn) client() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "runner", Version: "1"}, &sdk.ClientOptions{ElicitationHandler: c.elicit})
}

// NewInMemory connects to a server through t, as Start does (for tests
// with an in-process SDK server).
func NewInMemory(ctx context.Context, name string, t sdk.Transport) (*Conn, error) {
	c := &Conn{srv: Server{Name: name}, log: zerolog.Nop()}
	s, err := c.client().Connect(ctx, t, nil)
	if err != nil {
		return nil, err
	}
	c.session = s
	return c, nil
}

// Tools lists the server's tools, sorted by name so that the list the
// model sees does not depend on the server's order.
// The server's StartTimeout bounds the listing: it is part of starting.
func (c *Conn) Tools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	err := c.bounded(ctx, "tools/list", "start_timeout", c.srv.startTimeout(), func(ctx context.Context) error {
		for t, err := range c.session.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			schema, err := json.Marshal(t.InputSchema)
			if err != nil || t.InputSchema == nil {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		return nil
	})
	if errors.Is(err, ErrNoAnswer) {
		return nil, err
	}
	if err != nil {
		return nil, c.fail("listing tools", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Call calls a tool with args (a JSON object). A tool that reports a
// failure is a Result with IsError; a protocol error (an unknown tool,
// arguments the server refused) is returned as an error the model may
// see; a server that is gone is an error wrapping ErrServerGone, and
// one that does not answer within its CallTimeout, ErrNoAnswer.
func (c *Conn) Call(ctx context.Context, tool string, args json.RawMessage) (Result, error) {
	return c.CallElicit(ctx, tool, args, nil)
}

// CallElicit is Call, with elicit answering what the server asks a
// person during the call (nil: nobody can answer; the server is told
// cancel). An elicit that returns an error stops the call: the server is
// told cancel, the call is cancelled, and the error returned wraps both
// ErrCallStopped and elicit's error.
func (c *Conn) CallElicit(ctx context.Context, tool string, args json.RawMessage, elicit ElicitFunc) (Result, error) {
	var res *sdk.CallToolResult
	cl := &call{tool: tool, elicit: elicit}
	err := c.bounded(ctx, fmt.Sprintf("tools/call %q", tool), "call_timeout", c.srv.callTimeout(), func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cl.ctx, cl.cancel = ctx, cancel
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[*call]bool{}
		}
		c.calls[cl] = true
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			delete(c.calls, cl)
			c.mu.Unlock()
		}()
		var err error
		res, err = c.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
		return err
	})
	c.mu.Lock()
	stopped, notes := cl.stopped, cl.notes
	c.mu.Unlock()
	if stopped != nil {
		return Result{}, &stoppedError{err: stopped}
	}
	if errors.Is(err, ErrNoAnswer) {
		return Result{}, err
	}
	if err != nil {
		return Result{}, c.fail("calling "+tool, err)
	}
	text := contentText(res)
	for _, n := range notes {
		text += "\n[runner: " + n + "]"
	}
	return Result{Text: text, IsError: res.IsError}, nil
}

// fail turns an SDK error into one that says whether the server is gone.
func (c *Conn) fail(what string, err error) error {
	gone := errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, os.ErrClosed) || strings.Contains(err.Error(), "EOF") ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection closed")
	if gone {
		return fmt.Errorf("%w: %s %s: %v%s", ErrServerGone, c.srv.Name, what, err, c.lastStderrAfterExit())
	}
	return err
}

// stderrWait bounds how long a dead server's error waits for the rest
// of its stderr (something it started may hold stderr open).
const stderrWait = 2 * time.Second

// lastStderrAfterExit is lastStderr once the server's stderr has ended,
// or stderrWait has passed.
func (c *Conn) lastStderrAfterExit() string {
	if c.stderrDone != nil {
		select {
		case <-c.stderrDone:
		case <-time.After(stderrWait):
		}
	}
	return c.lastStderr()
}

func (c *Conn) lastStderr() string {
	if c.stderr == nil {
		return ""
	}
	if s := c.stderr.last(); s != "" {
		return "; its stderr ended with: " + s
	}
	return ""
}

// Close ends the session and, for a stdio server, its whole process
// group: stdin closed, then SIGTERM, then SIGKILL to the group, so that
// neither the server nor anything it started outlives the run.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		if c.session != nil {
			c.closeErr = c.session.Close()
		}
		c.killGroup()
		if c.stderr != nil {
			c.stderr.flush()
		}
	})
	return c.closeErr
}

// killGroup kills what is left of the server's process group.
func (c *Conn) killGroup() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	killGroup(c.cmd.Process)
}

// Pid is the server's process id (0 for an HTTP server), for tests.
func (c *Conn) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// serverEnv is a server's environment: what a program needs to run and
// find its files, and the env the plan gave it. Nothing else of runner's
// environment (API keys above all) reaches a server.
func serverEnv(env map[string]string) []string {
	var out []string
	for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			if _, set := env[k]; !set {
				out = append(out, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out
}

// contentText flattens a tool result's content into text.
func contentText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s]", v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s]", v.Resource.URI))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// headerTransport adds the plan's headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// tail logs a server's stderr line by line and keeps its last lines for
// the error that says the server died.
type tail struct {
	log  zerolog.Logger
	mask func(string) string

	mu    sync.Mutex
	buf   []byte
	lines []string
}

const tailLines = 5

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.line(string(t.buf[:i]))
		t.buf = t.buf[i+1:]
	}
	if len(t.buf) > 64<<10 { // a line without end: log it in pieces
		t.line(string(t.buf))
		t.buf = nil
	}
	return len(p), nil
}

func (t *tail) line(s string) {
	s = strings.TrimRight(s, "\r")
	if t.mask != nil {
		s = t.mask(s)
	}
	if strings.TrimSpace(s) == "" {
		return
	}
	t.log.Info().Str("stderr", s).Msg("MCP server")
	t.lines = append(t.lines, s)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

func (t *tail) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > 0 {
		t.line(string(t.buf))
		t.buf = nil
	}
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if len(t.buf) > 0 {
		lines = append(append([]string(nil), lines...), string(t.buf))
	}
	return strings.Join(lines, " | ")
}

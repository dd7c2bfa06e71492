package agents

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/agents/mcp"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/schemacheck"
)

// KindMCP is the Kind of the recordings of MCP exchanges: a server's tool
// list and each tool call, numbered per step visit (Call) in the order
// the step made them.
const KindMCP = "mcp"

// ToolReplaySource serves recorded MCP exchanges to a replay. The
// ReplaySource of FromRecordings is one.
type ToolReplaySource interface {
	ToolRecording(label string, visit, n int) (board.Recording, bool)
}

// mcpRequest is what an MCP recording keeps as its request, and hashes.
type mcpRequest struct {
	Server string          `json:"server,omitempty"` // "" for a tool the plan defines
	Op     string          `json:"op"`               // tools/list or tools/call
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
}

// mcpResponse is what an MCP recording keeps as its answer.
type mcpResponse struct {
	Tools  []mcp.Tool  `json:"tools,omitempty"`  // tools/list
	Result *mcp.Result `json:"result,omitempty"` // tools/call
	// Error is a call the server refused (an unknown tool, bad
	// arguments): the model saw it.
	Error string `json:"error,omitempty"`
}

// mcpTool is an MCP tool as a session offers it to the model.
type mcpTool struct {
	server *plans.MCPServer
	name   string // the server's name for it
	schema *schemacheck.Schema
}

// servers are the run's started MCP servers (scope run), by agent and
// server name, ended by Set.Close.
type servers struct {
	mu     sync.Mutex
	conns  map[string]*serverConn
	closed bool
	ending chan struct{} // closed when close has ended them
}

type serverConn struct {
	once sync.Once
	conn *mcp.Conn
	err  error
}

// Close ends the MCP servers the run started (their process groups).
// runs calls it when the run ends; a Set is not used after.
func (s *Set) Close() error { return s.servers.close() }

// Servers holds the MCP servers of scope run that steps start while it
// is in their context (WithServers), instead of the Set's: on Temporal a
// worker runs a step of a run without knowing whether the run has more
// steps for it, so the servers a step starts there are the step's, and
// end with it (Close), rather than live as long as the worker.
type Servers struct{ s servers }

// NewServers makes an empty pool.
func NewServers() *Servers { return &Servers{} }

// Close ends the pool's servers (their process groups) and makes any
// later start fail: a step still running past it cannot start one that
// nothing would end.
func (p *Servers) Close() error { return p.s.close() }

type serversKey struct{}

// WithServers makes the steps run with ctx start their MCP servers of
// scope run in p, which the caller ends.
func WithServers(ctx context.Context, p *Servers) context.Context {
	return context.WithValue(ctx, serversKey{}, p)
}

// close ends the servers; one called while another is ending them
// returns when they are ended, so that a caller may exit after it.
func (s *servers) close() error {
	s.mu.Lock()
	if s.ending != nil {
		ending := s.ending
		s.mu.Unlock()
		<-ending
		return nil
	}
	s.ending = make(chan struct{})
	defer close(s.ending)
	conns := s.conns
	s.conns, s.closed = nil, true
	s.mu.Unlock()
	var errs []error
	for _, c := range conns {
		c.once.Do(func() {}) // one still starting has finished (Do waits)
		if c.conn != nil {
			if err := c.conn.Close(); err != nil && !isExitErr(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// isExitErr reports the error of a server that exited non-zero when told
// to end (killed by our signal): not worth reporting.
func isExitErr(err error) bool {
	return strings.Contains(err.Error(), "signal: ") || strings.Contains(err.Error(), "exit status")
}

// Close ends the MCP servers the session started for itself (scope
// step), and its hold on the agent's memory. The llm step calls it when
// its visit ends.
func (ss *Session) Close() {
	ss.releaseMemory()
	for _, c := range ss.ownConns {
		_ = c.Close()
	}
	ss.ownConns = nil
}

// conn returns the started server srv of the session's agent: the run's
// (started once) or, for scope step, the session's own.
func (ss *Session) conn(ctx context.Context, srv *plans.MCPServer) (*mcp.Conn, error) {
	if c, ok := ss.stepConns[srv.Name]; ok {
		return c, nil
	}
	start := func() (*mcp.Conn, error) {
		srvc := ss.set.mcpServer(srv, ss.Dir)
		srvc.Setting = "agents." + ss.agent.Name + ".mcp." + srv.Name
		return mcp.Start(ctx, srvc, ss.set.log)
	}
	if srv.Scope == plans.ScopeStep {
		c, err := start()
		if err != nil {
			return nil, err
		}
		if ss.stepConns == nil {
			ss.stepConns = map[string]*mcp.Conn{}
		}
		ss.stepConns[srv.Name] = c
		ss.ownConns = append(ss.ownConns, c)
		return c, nil
	}
	key := ss.agent.Name + "/" + srv.Name
	s := &ss.set.servers
	if p, ok := ctx.Value(serversKey{}).(*Servers); ok && p != nil {
		s = &p.s
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("MCP server %s not started: the run (on Temporal, the step, or the worker) has ended", srv.Name)
	}
	if s.conns == nil {
		s.conns = map[string]*serverConn{}
	}
	sc, ok := s.conns[key]
	if !ok {
		sc = &serverConn{}
		s.conns[key] = sc
	}
	s.mu.Unlock()
	sc.once.Do(func() { sc.conn, sc.err = start() })
	return sc.conn, sc.err
}

// mcpServer is how to start srv: its secrets read from the environment,
// its stderr masked.
func (s *Set) mcpServer(srv *plans.MCPServer, dir string) mcp.Server {
	expand := func(m map[string]string) map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = plans.ExpandSecrets(v, s.getenv)
			refs, _ := plans.SecretRefs(v)
			for _, name := range refs {
				s.mask.Add(s.getenv(name)) // whatever the server echoes of it is masked
			}
		}
		return out
	}
	return mcp.Server{Name: srv.Name, Command: srv.Command, Env: expand(srv.Env), Dir: dir,
		URL: srv.URL, Headers: expand(srv.Headers), Mask: s.mask.String,
		StartTimeout: srv.StartTimeout, CallTimeout: srv.CallTimeout}
}

// nameRE is what both providers accept as a tool name.
var nameRE = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// ToolName is the name the model sees for tool of server: SERVER__TOOL,
// with any character a provider refuses made _.
func ToolName(server, tool string) string {
	n := server + "__" + nameRE.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		sum := sha256.Sum256([]byte(n))
		n = n[:55] + "_" + hex.EncodeToString(sum[:4])
	}
	return n
}

// MCPTools lists the tools of the agent's MCP servers that its tools
// patterns allow, as the model will see them, and makes them callable
// through RunTool. The lists come from the servers (started if need be)
// or, in a replay, from the recording; each is recorded.
func (ss *Session) MCPTools(ctx context.Context) ([]Tool, error) {
	spec := ss.agent.Spec
	if spec == nil || len(spec.MCP) == 0 {
		return nil, nil
	}
	var out []Tool
	for _, srv := range spec.MCP {
		var resp mcpResponse
		err := ss.mcpExchange(ctx, mcpRequest{Server: srv.Name, Op: "tools/list"}, &resp, func(c *mcp.Conn) error {
			tools, err := c.Tools(ctx)
			resp.Tools = tools
			return err
		}, srv)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Tools {
			if !plans.ToolAllowed(spec.Tools, srv.Name, t.Name) {
				continue
			}
			name := ToolName(srv.Name, t.Name)
			if _, dup := ss.mcpTools[name]; dup {
				return nil, fmt.Errorf("agent %s: MCP tools %s.%s and another both become %s for the model; leave one out of tools", ss.agent.Name, srv.Name, t.Name, name)
			}
			sch, err := schemacheck.Compile("tool.json", t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("agent %s: MCP server %s: tool %s has an input schema runner cannot use: %v", ss.agent.Name, srv.Name, t.Name, err)
			}
			if ss.mcpTools == nil {
				ss.mcpTools = map[string]*mcpTool{}
			}
			ss.mcpTools[name] = &mcpTool{server: srv, name: t.Name, schema: sch}
			out = append(out, Tool{Name: name, Description: t.Description, Parameters: t.InputSchema})
		}
	}
	return out, nil
}

// IsMCPTool reports whether name is one of the session's MCP tools.
func (ss *Session) IsMCPTool(name string) bool {
	_, ok := ss.mcpTools[name]
	return ok
}

// RunMCPTool performs a call of the model to an MCP tool and returns the
// tool turn that answers it. Arguments that do not match the tool's input
// schema, a tool's own failure and a call the server refused are answers
// the model sees (IsError); a server that is gone, a replay that
// diverged or a cancelled step are errors of the step.
func (ss *Session) RunMCPTool(ctx context.Context, tc ToolCall) (Message, error) {
	m := Message{Role: RoleTool, ToolCallID: tc.ID, Name: tc.Name}
	t := ss.mcpTools[tc.Name]
	if t == nil {
		m.Content, m.IsError = fmt.Sprintf("error: unknown tool %q", tc.Name), true
		return m, nil
	}
	_, canonArgs, ok, err := toolArgs(&m, tc, t.schema, "nothing was called")
	if !ok || err != nil {
		return m, err
	}
	var resp mcpResponse
	err = ss.mcpExchange(ctx, mcpRequest{Server: t.server.Name, Op: "tools/call", Tool: t.name, Args: canonArgs}, &resp, func(c *mcp.Conn) error {
		r, err := c.CallElicit(ctx, t.name, canonArgs, ss.Elicit)
		if err != nil {
			if errors.Is(err, mcp.ErrServerGone) || errors.Is(err, mcp.ErrNoAnswer) || errors.Is(err, mcp.ErrCallStopped) || ctx.Err() != nil {
				return err
			}
			resp.Error = err.Error() // refused: the model sees it
			return nil
		}
		resp.Result = &r
		return nil
	}, t.server)
	if err != nil {
		return m, err
	}
	switch {
	case resp.Error != "":
		m.Content, m.IsError = "error: "+resp.Error, true
	case resp.Result != nil:
		m.Content, m.IsError = resp.Result.Text, resp.Result.IsError
	}
	clipToolText(&m)
	return m, nil
}

// toolArgs reads the arguments of a call to a tool whose input schema is
// sch. Arguments that are not a JSON object valid under it are answered
// in m, for the model to see, ending with nothing (what was not done),
// and ok is false.
func toolArgs(m *Message, tc ToolCall, sch *schemacheck.Schema, nothing string) (obj map[string]any, canon json.RawMessage, ok bool, err error) {
	args := normalizeArgs(tc.Args)
	obj, ok = argsObject(args)
	if !ok {
		m.Content, m.IsError = fmt.Sprintf("error: the arguments of %s must be a JSON object, got %s", tc.Name, clip(string(tc.Args), 200)), true
		return nil, nil, false, nil
	}
	if err := sch.Validate(any(obj)); err != nil {
		m.Content, m.IsError = fmt.Sprintf("error: the arguments do not match the input schema of %s: %s; %s", tc.Name, schemacheck.Message(err), nothing), true
		return nil, nil, false, nil
	}
	canon, err = canonicalJSON(args)
	return obj, canon, err == nil, err
}

// clipToolText cuts a tool's answer that is longer than a tool may return.
func clipToolText(m *Message) {
	if len(m.Content) > maxToolText {
		m.Content = m.Content[:maxToolText] + fmt.Sprintf("\n[cut: the result is %d bytes, more than the %d a tool may return]", len(m.Content), maxToolText)
	}
}

// mcpExchange makes one MCP exchange, live (live runs it against the
// started server) or from the recording, and records it. Secrets are
// masked in what the model sees and in what is recorded alike, so a
// replay feeds the model the same bytes.
func (ss *Session) mcpExchange(ctx context.Context, req mcpRequest, resp *mcpResponse, live func(*mcp.Conn) error, srv *plans.MCPServer) error {
	if !ss.mcpNumbered {
		// A resumed visit goes on after the exchanges its killed run
		// recorded, as its model calls do, so no number means two things.
		ss.mcpNumbered = true
		if ss.board != nil {
			for _, r := range ss.board.RecordingsKeyed() { // call numbers only
				if (r.Kind == KindMCP || r.Kind == KindTool) && r.Label == ss.label && r.Visit == ss.visit && r.Call > ss.mcpCalls {
					ss.mcpCalls = r.Call
				}
			}
		}
	}
	ss.mcpCalls++
	n := ss.mcpCalls
	canon, err := json.Marshal(req)
	if err != nil {
		return err
	}
	canon = ss.set.mask.Bytes(canon)
	h := sha256.Sum256(canon)
	sum := hex.EncodeToString(h[:])
	what := req.Op + " of MCP server " + req.Server
	kind := KindMCP
	switch {
	case srv == nil: // a tool the plan defines
		what, kind = "call of tool "+req.Tool+" the plan defines", KindTool
	case req.Tool != "":
		what = "call of tool " + req.Tool + " of MCP server " + req.Server
	}
	replayed := ss.set.replay != nil && !ss.live()
	if ss.own != nil {
		if rec, ok := ss.ownCall(KindMCP, n, sum); ok && json.Unmarshal(rec.Response, resp) == nil {
			return nil // made before the visit stopped to ask, and recorded then
		}
	}
	reused := false
	switch {
	case replayed:
		src, _ := ss.set.replay.(ToolReplaySource)
		var rec board.Recording
		ok := false
		if src != nil {
			rec, ok = src.ToolRecording(ss.label, ss.visit, n)
		}
		if !ok {
			return &Divergence{Label: ss.label, Visit: ss.visit, Call: n, Now: canon, What: what}
		}
		if rec.RequestSHA256 != sum {
			return &Divergence{Label: ss.label, Visit: ss.visit, Call: n, Recorded: rec.Request, Now: canon, What: what}
		}
		if err := json.Unmarshal(rec.Response, resp); err != nil {
			return fmt.Errorf("replay: step %s visit %d MCP exchange %d: the recorded answer is unreadable: %w", ss.label, ss.visit, n, err)
		}
		reused = true // recorded again below, as a replay does model calls
	case ss.set.reuse != nil:
		if rec, ok := ss.set.reuse.toolAnswer(ss.label, ss.visit, n, sum); ok && json.Unmarshal(rec.Response, resp) == nil {
			reused = true
		}
	}
	if !reused {
		var c *mcp.Conn
		if srv != nil {
			if c, err = ss.conn(ctx, srv); err != nil {
				return fmt.Errorf("agent %s: %w", ss.agent.Name, err)
			}
		}
		if err := live(c); err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("agent %s: %w", ss.agent.Name, err)
		}
		ss.maskResponse(resp)
	}
	if ss.board == nil {
		return nil
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	return ss.board.AddRecording(board.Recording{Label: ss.label, Visit: ss.visit, Kind: kind, Call: n,
		Agent: ss.agent.Name, RequestSHA256: sum, Request: canon, Response: out})
}

// maskResponse hides the run's secrets in what a server answered.
func (ss *Session) maskResponse(r *mcpResponse) {
	m := ss.set.mask
	r.Error = m.String(r.Error)
	if r.Result != nil {
		r.Result.Text = m.String(r.Result.Text)
	}
	for i := range r.Tools {
		r.Tools[i].Description = m.String(r.Tools[i].Description)
	}
}

// toolAnswer is the recorded MCP exchange n of a step visit, while reuse
// takes tool results from recordings (runner run --reuse --offline) and
// the run has not gone live.
func (u *Reuse) toolAnswer(label string, visit, n int, sum string) (board.Recording, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.live || !u.tools {
		return board.Recording{}, false
	}
	for _, s := range u.sources {
		ts, ok := s.(ToolReplaySource)
		if !ok {
			continue
		}
		if rec, ok := ts.ToolRecording(label, visit, n); ok && rec.RequestSHA256 == sum {
			return rec, true
		}
	}
	return board.Recording{}, false
}

// ReuseTools makes reuse take MCP tool lists and results from the
// recordings too, while the run has not gone live (runner run --reuse
// --offline: no server is started). Without it tools run for real, as
// commands do, so a tool that writes files writes them.
func (u *Reuse) ReuseTools() { u.tools = true }

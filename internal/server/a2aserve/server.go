// Package a2aserve serves plans as Agent2Agent (A2A) agents (`runner
// a2a`), through the official SDK (github.com/a2aproject/a2a-go): each
// plan gets an agent card and a JSON-RPC endpoint; a message starts a
// run of the plan, the task's states follow the run (working, then
// input-required at an input step, completed, failed or canceled), steps
// starting and ending stream as status updates, an answer to
// input-required is recorded as `runner answer` records it and the run
// resumes, and the run's outputs come back as artifacts.
//
// Runs are run in this process by the library the CLI uses (runs,
// engine, steps); the package imports those, board, plans, sys/mask and
// the SDK, and is imported by cmd/runner only. docs/a2a.md is the user's
// page.
package a2aserve

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/rs/zerolog"

	"github.com/planrunner/runner/internal/engine"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/mask"
)

// Options say what a Server serves.
type Options struct {
	// Plans are the plan files served, one agent each.
	Plans []string
	// Workdir is where the runs' steps run (runs are saved under
	// WORKDIR/.runner/runs); "": the current directory.
	Workdir string
	// BaseURL is the server's URL as clients reach it
	// (http://127.0.0.1:8765): the cards name their endpoints under it.
	BaseURL string
	// Token, when set, is the bearer token every protocol call must
	// carry; the cards are public. "": no token (tests, a proxy that
	// authenticates).
	Token string
	// Version is runner's version, on the cards and saved with each run.
	Version string
	// Log receives what the server does; the zero Logger logs nothing.
	Log zerolog.Logger
	// Mask hides the runs' secrets; nil: a mask of the server's own.
	Mask *mask.Masker
}

// Server serves its plans over A2A. Its tasks live as long as it does;
// their runs are saved runs like any other.
type Server struct {
	o      Options
	agents []*agent

	mu    sync.Mutex
	tasks map[sdk.TaskID]*task
}

// agent is one plan served.
type agent struct {
	s    *Server
	name string
	path string
	plan *plans.Plan
	card *sdk.AgentCard
	rpc  http.Handler
}

// task is a task's run: its board file, and how to stop it while it runs.
type task struct {
	board  string
	runID  string
	cancel context.CancelFunc // nil when no run is under way
}

// ExtensionURI names the card extension that carries a plan's inputs as
// a JSON Schema (params.schema).
const ExtensionURI = "https://github.com/planrunner/runner/blob/main/docs/a2a.md#inputs"

// New loads and checks the plans: a plan with problems is an error, as
// for `runner validate`.
func New(o Options) (*Server, error) {
	if len(o.Plans) == 0 {
		return nil, errors.New("no plan to serve")
	}
	if o.Mask == nil {
		o.Mask = mask.New()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	s := &Server{o: o, tasks: map[sdk.TaskID]*task{}}
	seen := map[string]string{}
	for _, p := range o.Plans {
		prog, err := engine.Load(p, steps.Registry())
		if err != nil {
			return nil, err
		}
		name := AgentName(prog.Plan, p)
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("plans %s and %s are both named %q: an agent's name is its plan's name, and two agents cannot share one", other, p, name)
		}
		seen[name] = p
		a := &agent{s: s, name: name, path: p, plan: prog.Plan}
		a.card = s.card(a)
		a.rpc = a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(&executor{a: a}, a2asrv.WithLogger(sdkLog(o.Log))))
		s.agents = append(s.agents, a)
	}
	return s, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// AgentName is the name a plan is served under, the last part of its
// URL path: the plan's name, or its file's name without extension.
func AgentName(p *plans.Plan, path string) string {
	n := p.Name
	if n == "" {
		n = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	n = strings.Trim(unsafeName.ReplaceAllString(n, "-"), "-")
	if n == "" {
		n = "plan"
	}
	return n
}

// Names lists the agents served, in the order of Options.Plans.
func (s *Server) Names() []string {
	out := make([]string, len(s.agents))
	for i, a := range s.agents {
		out[i] = a.name
	}
	return out
}

// Card is the card of the agent named name.
func (s *Server) Card(name string) (*sdk.AgentCard, bool) {
	for _, a := range s.agents {
		if a.name == name {
			return a.card, true
		}
	}
	return nil, false
}

// Handler serves every agent: its card at /NAME/.well-known/agent-card.json
// and its JSON-RPC endpoint at /NAME. With a token, a protocol call
// without it is refused (401) before the SDK sees it; the token is
// compared in constant time.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	want := []byte("Bearer " + s.o.Token)
	for _, a := range s.agents {
		mux.Handle("GET /"+a.name+a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(a.card))
		rpc := a.rpc
		mux.Handle("POST /"+a.name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.o.Token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="runner a2a"`)
				http.Error(w, "runner a2a: give the token runner a2a printed at its start as the header Authorization: Bearer TOKEN", http.StatusUnauthorized)
				return
			}
			rpc.ServeHTTP(w, r)
		}))
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		urls := make([]string, len(s.agents))
		for i, a := range s.agents {
			urls[i] = s.o.BaseURL + "/" + a.name
		}
		json.NewEncoder(w).Encode(map[string]any{"agents": urls})
	})
	return mux
}

// card describes a plan as an agent: its name and description, one skill
// (running the plan), and its vars as a JSON Schema in an extension.
func (s *Server) card(a *agent) *sdk.AgentCard {
	desc := a.plan.Description
	if desc == "" {
		desc = "runner plan " + a.name
	}
	tags := []string{"runner", "plan"}
	for _, st := range a.plan.AllSteps() {
		if st.Type != "" && !slices.Contains(tags, st.Type) {
			tags = append(tags, st.Type)
		}
	}
	skillDesc := desc
	if len(a.plan.Vars) > 0 {
		names := make([]string, len(a.plan.Vars))
		for i, v := range a.plan.Vars {
			names[i] = v.Name
		}
		skillDesc += fmt.Sprintf(" Inputs (a data part of the message): %s.", strings.Join(names, ", "))
	}
	c := &sdk.AgentCard{
		Name:               a.name,
		Description:        desc,
		URL:                s.o.BaseURL + "/" + a.name,
		PreferredTransport: sdk.TransportProtocolJSONRPC,
		ProtocolVersion:    "0.3.0",
		Version:            s.o.Version,
		Provider:           &sdk.AgentProvider{Org: "runner", URL: "https://github.com/planrunner/runner"},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Capabilities:       sdk.AgentCapabilities{Streaming: true},
		Skills: []sdk.AgentSkill{{
			ID: a.name, Name: a.name, Description: skillDesc, Tags: tags,
			InputModes: []string{"application/json", "text/plain"}, OutputModes: []string{"application/json", "text/plain"},
		}},
	}
	if len(a.plan.Vars) > 0 {
		c.Capabilities.Extensions = []sdk.AgentExtension{{URI: ExtensionURI,
			Description: "The plan's inputs (its vars), as a JSON Schema: send them as a data part of the message that starts a task.",
			Params:      map[string]any{"schema": InputSchema(a.plan)}}}
	}
	if s.o.Token != "" {
		c.SecuritySchemes = sdk.NamedSecuritySchemes{"bearer": sdk.HTTPAuthSecurityScheme{Scheme: "Bearer",
			Description: "the token runner a2a printed at its start"}}
		c.Security = []sdk.SecurityRequirements{{"bearer": sdk.SecuritySchemeScopes{}}}
	}
	return c
}

// InputSchema is a plan's vars as a JSON Schema object: each var's type
// is its default's.
func InputSchema(p *plans.Plan) map[string]any {
	props := map[string]any{}
	required := []string{}
	for _, v := range p.Vars {
		if v.Default == nil {
			required = append(required, v.Name) // a var without a default must be given
		}
		prop := map[string]any{}
		switch v.Default.(type) {
		case string:
			prop["type"] = "string"
		case int, int64, uint64:
			prop["type"] = "integer"
		case float64:
			prop["type"] = "number"
		case bool:
			prop["type"] = "boolean"
		case []any:
			prop["type"] = "array"
		case map[string]any:
			prop["type"] = "object"
		}
		if v.Default != nil {
			prop["default"] = v.Default
		}
		props[v.Name] = prop
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func (s *Server) task(id sdk.TaskID) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

func (s *Server) setTask(id sdk.TaskID, t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks[id] = t
}

// running records the cancel of a task's run under way (nil: none).
func (s *Server) running(id sdk.TaskID, cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tasks[id]; t != nil {
		t.cancel = cancel
	}
}

// stop cancels a task's run under way, if one is.
func (s *Server) stop(id sdk.TaskID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tasks[id]; t != nil && t.cancel != nil {
		t.cancel()
	}
}

// sdkLog is the SDK's logger: its warnings and errors go to log, as the
// SDK's JSON lines; its info (every task's every state) is left out.
func sdkLog(log zerolog.Logger) *slog.Logger {
	return slog.New(slog.NewJSONHandler(log.With().Str("component", "a2a-go").Logger(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

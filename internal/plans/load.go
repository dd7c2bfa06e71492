package plans

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/sys/readlimit"
	"gopkg.in/yaml.v3"
)

// CommonStepFields are the fields every step may have; any other field
// belongs to the step's type.
var CommonStepFields = []string{"label", "type", "if", "timeout", "retry", "continue_on_error",
	"max_visits", "write", "parallel", "max_concurrency", "fail_fast", "for_each", "steps", "needs"}

var topFields = []string{"version", "name", "description", "vars", "env", "secrets", "agents", "limits", "board", "steps", "outputs", "tools", "notify", "budgets"}

// Providers are the agent providers runner knows.
var Providers = []string{"openai", "anthropic", "script", "a2a"}

// Load reads and checks the plan at path.
func Load(path string) (*Plan, error) {
	src, err := readlimit.File(path, readlimit.Plan)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse checks a plan's source. The error, if any, is an Errors listing
// every problem found; the Plan is returned as far as it could be read, so
// callers may go on checking it (the engine decodes step types) and report
// all problems together.
func Parse(path string, src []byte) (*Plan, error) {
	return parse(path, src, nil, false)
}

// ParseLean is Parse for a caller that compiles the plan step by step: a
// top-level step written in the plan's block list of steps lets go of its
// YAML as soon as it is read, so that a large plan's whole tree is never
// in memory at once. Such a step (LetGo) has its nodes read again from
// the plan's text by RestoreNodes or Reparse. A step that calls a plan
// keeps its own, as does every step of a plan written in YAML only
// yaml.v3 reads (anchors, tags, flow style at the top).
func ParseLean(path string, src []byte) (*Plan, error) {
	return parse(path, src, nil, true)
}

// ParseLeanText is ParseLean of a plan's text held as a string (a saved
// run's): the plan shares the text instead of copying it, twice, which
// at 100k steps was 20 MB more for every reader of a saved run's plan.
func ParseLeanText(path, text string) (*Plan, error) {
	return parseText(path, text, nil, true)
}

// parse is Parse of a file called from the chain st holds (nil: the plan
// that is run).
func parse(path string, src []byte, st *loadState, lean bool) (*Plan, error) {
	// One copy of the text, kept for the run: what the fast reader gives
	// a step (its scalars) is slices of it, and the board records it.
	return parseText(path, string(src), st, lean)
}

func parseText(path, text string, st *loadState, lean bool) (*Plan, error) {
	sum := sumText(text)
	p := &Plan{Path: path, Source: text, SHA256: hex.EncodeToString(sum[:]), labels: map[string]*Step{}, load: st}
	r := &Reporter{File: path}
	var fs *fySteps
	var streamed []*Step
	read := 0 // items of the list handed on
	if lean {
		fs = &fySteps{item: func(n *yaml.Node, off, end, line int) {
			i := read
			read++
			if !checkNodes(r, n) {
				return
			}
			s := parseStep(r, p, n, nil)
			if s == nil {
				return
			}
			s.Index = i
			if !s.hasCall() {
				s.text = textSpan{off: int32(off), end: int32(end), line: int32(line)}
				s.DropNodes()
			}
			streamed = append(streamed, s)
		}}
	}
	doc, dec, yerr := parseYAMLStream(path, text, fs)
	if fs != nil && fs.list == nil && read > 0 {
		// fastYAML gave up after some steps: yaml.v3 reads them all
		// again, into the tree.
		streamed, r.List = nil, nil
		p.labels, p.calls = map[string]*Step{}, nil
	}
	if yerr != nil {
		r.List = append(r.List, yerr)
		return p, r.Err()
	}
	if !checkNodes(r, doc) {
		return p, r.Err()
	}
	root := Resolve(doc)
	if root == nil || root.Kind == 0 || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		r.AtPos(1, 1, "the plan is empty; it needs at least version and steps")
		return p, r.Err()
	}
	if doc.Kind == yaml.DocumentNode && len(strings.TrimSpace(text)) > 0 {
		if n, broken := moreDocuments(dec); n > 0 {
			r.AtPos(secondDocument(text), 1, "the file holds %d YAML documents (a second one starts here); a plan is one", n+1)
		} else if broken {
			r.AtPos(secondDocument(text), 1, "the file holds more than one YAML document (a second one starts here, and is not valid YAML); a plan is one")
		}
	}
	fields := Fields(r, root, "the plan")
	has := map[string]bool{}
	for _, f := range fields {
		has[f.Key] = true
		switch f.Key {
		case "env", "secrets", "limits", "board", "notify", "budgets":
			p.runOnly = append(p.runOnly, f.KeyN)
		}
		switch f.Key {
		case "version":
			if v, ok := Int(r, f.Value, "version"); ok {
				if v != 1 {
					r.At(f.Value, "version %d is not supported (this runner reads version 1)", v)
				}
				p.Version = v
			}
		case "name":
			p.Name, _ = String(r, f.Value, "name")
		case "description":
			p.Description, _ = String(r, f.Value, "description")
		case "vars":
			p.Vars = parseVars(r, f.Value)
		case "env":
			p.Env = parseEnv(r, f.Value)
		case "secrets":
			p.Secrets = parseSecrets(r, f.Value)
		case "agents":
			p.Agents = parseAgents(r, f.Value)
		case "limits":
			p.Limits = parseLimits(r, f.Value)
		case "board":
			p.Board = parseBoardOptions(r, f.Value)
		case "steps":
			if fs != nil && fs.list != nil && f.Value == fs.list {
				p.Steps = streamed
				break
			}
			p.Steps = parseSteps(r, p, f.Value, nil)
		case "outputs":
			p.Outputs = parseOutputs(r, f.Value)
		case "tools":
			p.Tools = parseTools(r, f.Value)
		case "notify":
			p.Notify = parseNotify(r, f.Value)
		case "budgets":
			p.Budgets = ParseBudgets(r, f.Value)
		default:
			Unknown(r, f, "the plan", topFields)
		}
	}
	if !has["version"] && root.Kind == yaml.MappingNode {
		r.At(root, "missing required field \"version\" (write version: 1)")
	}
	if !has["steps"] && root.Kind == yaml.MappingNode {
		r.At(root, "missing required field \"steps\"")
	}
	loadToolPlans(r, p)
	checkAgentTools(r, p)
	if p.Limits.MaxSteps == 0 {
		p.Limits.MaxSteps = DefaultMaxSteps
	}
	// Callees are loaded once the caller is read whole: a call's agents
	// name the caller's, which may come after its steps.
	for _, pc := range p.calls {
		pc.step.Own().Call = parseCall(r, p, pc.step, pc.has)
	}
	p.calls = nil
	p.numberSteps()
	return p, r.Err()
}

// moreDocuments counts the documents dec holds after the first, already
// decoded one; broken is whether one of them is not valid YAML (it counts
// as a second document all the same: a plan file holds one). A nil dec
// read a source of one document.
func moreDocuments(dec *yaml.Decoder) (n int, broken bool) {
	if dec == nil {
		return 0, false
	}
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if err == io.EOF {
			return n, false
		}
		if err != nil {
			return n, true
		}
		n++
	}
}

func parseVars(r *Reporter, n *yaml.Node) []Var {
	var out []Var
	for _, f := range Fields(r, n, "vars") {
		if !ValidIdent(f.Key) {
			r.At(f.KeyN, "var name %q must be letters, digits and _ (usable as vars.%s)", f.Key, f.Key)
			continue
		}
		var v any
		if err := Resolve(f.Value).Decode(&v); err != nil {
			r.At(f.Value, "var %s: %v", f.Key, err)
			continue
		}
		out = append(out, Var{Name: f.Key, Default: v, Node: f.Value})
	}
	return out
}

func parseEnv(r *Reporter, n *yaml.Node) []EnvVar {
	var out []EnvVar
	for _, f := range Fields(r, n, "env") {
		if !ValidIdent(f.Key) {
			r.At(f.KeyN, "env name %q must be letters, digits and _", f.Key)
			continue
		}
		if v, ok := String(r, f.Value, "env."+f.Key); ok {
			out = append(out, EnvVar{Name: f.Key, Value: v, Node: f.Value})
		}
	}
	return out
}

func parseLimits(r *Reporter, n *yaml.Node) Limits {
	var l Limits
	known := []string{"max_steps", "timeout", "max_tokens", "max_cost_usd"}
	for _, f := range Fields(r, n, "limits") {
		switch f.Key {
		case "max_steps":
			if v, ok := Int(r, f.Value, "limits.max_steps"); ok {
				if v < 1 {
					r.At(f.Value, "limits.max_steps must be at least 1")
				}
				l.MaxSteps = v
			}
		case "timeout":
			l.Timeout, _ = Duration(r, f.Value, "limits.timeout")
		case "max_tokens":
			if v, ok := Int(r, f.Value, "limits.max_tokens"); ok {
				if v < 1 {
					r.At(f.Value, "limits.max_tokens must be at least 1")
				}
				l.MaxTokens = v
			}
		case "max_cost_usd":
			if v, ok := Float(r, f.Value, "limits.max_cost_usd"); ok {
				if v <= 0 {
					r.At(f.Value, "limits.max_cost_usd must be more than 0")
				}
				l.MaxCostUSD = v
			}
		default:
			Unknown(r, f, "limits", known)
		}
	}
	return l
}

// sumText is the SHA-256 of text, hashed a part at a time (not one copy
// of the whole as bytes).
func sumText(text string) [sha256.Size]byte {
	h := sha256.New()
	for len(text) > 0 {
		n := min(len(text), 64<<10)
		h.Write([]byte(text[:n]))
		text = text[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Reserved labels are goto targets.
var reservedLabels = map[string]bool{"end": true, "fail": true}

func parseSteps(r *Reporter, p *Plan, n *yaml.Node, parent *Step) []*Step {
	n = Resolve(n)
	what := "steps"
	if parent != nil {
		what = parent.Label + ".parallel"
		if parent.Sequence {
			what = parent.Label + ".steps"
		}
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		r.At(n, "%s must be a list of steps, got %s", what, KindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		r.At(n, "%s is empty", what)
	}
	var out []*Step
	for i, sn := range n.Content {
		if s := parseStep(r, p, sn, parent); s != nil {
			s.Index = i
			out = append(out, s)
		}
	}
	if parent != nil && !parent.Sequence {
		checkNeeds(r, out)
	}
	return out
}

func parseStep(r *Reporter, p *Plan, n *yaml.Node, parent *Step) *Step {
	n = Resolve(n)
	s := &Step{Node: n, Parent: parent, MaxVisits: DefaultMaxVisits, StepMore: plainStep}
	fields := Fields(r, n, "a step")
	if fields == nil {
		return nil
	}
	s.Line = n.Line
	has := fieldMap(fields)
	if ln, ok := has.get("label"); ok {
		if l, ok := String(r, ln, "label"); ok {
			switch {
			case l == "":
				r.At(ln, "label is empty: name the step (a-z, 0-9 and _, starting with a letter)")
			case !ValidLabel(l):
				r.At(ln, "label %q must match [a-z][a-z0-9_]* (so steps.%s works in expressions)", l, l)
			case reservedLabels[l]:
				r.At(ln, "label %q is reserved for goto", l)
			case p.labels[l] != nil:
				r.At(ln, "label %q is already used by the step at line %d", l, p.labels[l].Line)
			default:
				p.labels[l] = s
			}
			s.Label = l
		}
	} else {
		r.At(n, "step is missing required field \"label\"")
	}
	if tn, ok := has.get("type"); ok {
		s.TypeNode = tn
		s.Type, _ = String(r, tn, "type")
	}
	for _, f := range fields {
		switch f.Key {
		case "if":
			s.If = expr(r, f.Value, "if")
		case "timeout":
			s.Timeout, _ = Duration(r, f.Value, "timeout")
		case "retry":
			s.Retry = parseRetry(r, f.Value)
		case "continue_on_error":
			s.ContinueOnError, _ = Bool(r, f.Value, "continue_on_error")
		case "max_visits":
			if v, ok := Int(r, f.Value, "max_visits"); ok {
				if v < 1 {
					r.At(f.Value, "max_visits must be at least 1")
				}
				s.MaxVisits = v
			}
		case "write":
			s.Write = parseWrite(r, f.Value)
		case "parallel":
			if s.Type != "" {
				r.At(f.KeyN, "a step has either type or parallel, not both")
			}
			s.Own().Parallel = parseSteps(r, p, f.Value, s)
		case "max_concurrency":
			if v, ok := Int(r, f.Value, "max_concurrency"); ok {
				if v < 1 {
					r.At(f.Value, "max_concurrency must be at least 1")
				}
				s.Own().MaxConcurrency = v
			}
		case "fail_fast":
			s.Own().FailFast, _ = Bool(r, f.Value, "fail_fast")
		case "steps":
			s.Own().Sequence = true
			switch {
			case parent == nil || parent.Sequence:
				r.At(f.KeyN, "steps: (a sequence) is for a child of a parallel group; here the steps run in order already")
			case has.node("type") != nil || has.node("parallel") != nil:
				r.At(f.KeyN, "a step has one of type, parallel or steps")
			}
			for _, k := range []string{"retry", "timeout", "write"} {
				if v := has.node(k); v != nil {
					r.At(v, "%s applies to a step with a type, not to a sequence", k)
				}
			}
			if has.node("for_each") == nil {
				for _, k := range []string{"max_concurrency", "fail_fast"} {
					if v := has.node(k); v != nil {
						r.At(v, "%s applies to a sequence only with for_each (its steps run one after another)", k)
					}
				}
			}
			s.Own().Steps = parseSteps(r, p, f.Value, s)
		case "needs":
			s.Own().NeedsNode = Resolve(f.Value)
			s.Needs = StringList(r, f.Value, "needs")
			if parent == nil || parent.Sequence {
				r.At(f.KeyN, "needs applies to a child of a parallel group (it names siblings it waits for)")
			}
		case "for_each":
			s.Own().ForEach = expr(r, f.Value, "for_each")
			if s.ForEach == nil {
				s.ForEach = &Expr{Node: Resolve(f.Value)} // reported; still a for_each for what follows
			}
		}
	}
	if s.Type == CallType && has.node("parallel") == nil && has.node("steps") == nil {
		p.calls = append(p.calls, pendingCall{step: s, has: has})
	}
	if has.node("for_each") != nil && has.node("max_concurrency") == nil {
		s.Own().MaxConcurrency = DefaultForEachConcurrency
	}
	if has.node("parallel") == nil && has.node("steps") == nil {
		if has.node("type") == nil {
			r.At(n, "step %q is missing required field \"type\" (or \"parallel\" for a group, \"steps\" for a sequence inside one)", s.Label)
		}
		if has.node("for_each") == nil {
			for _, k := range []string{"max_concurrency", "fail_fast"} {
				if v := has.node(k); v != nil {
					r.At(v, "%s applies only to a parallel group or a for_each step", k)
				}
			}
		}
	}
	return s
}

func expr(r *Reporter, n *yaml.Node, what string) *Expr {
	rn := Resolve(n)
	if rn != nil && rn.Kind == yaml.ScalarNode && rn.Tag == "!!bool" {
		return &Expr{Src: rn.Value, Node: rn}
	}
	src, ok := String(r, n, what)
	if !ok {
		return nil
	}
	if src == "" {
		r.At(n, "%s is empty", what)
		return nil
	}
	return &Expr{Src: src, Node: rn}
}

func parseRetry(r *Reporter, n *yaml.Node) *Retry {
	rt := &Retry{Backoff: time.Second, MaxBackoff: 30 * time.Second, Node: n}
	if rn := Resolve(n); rn != nil && rn.Kind == yaml.ScalarNode {
		// `retry: 3` is short for `retry: {max: 3}`.
		rt.Max, _ = Int(r, rn, "retry")
		return rt
	}
	known := []string{"max", "backoff", "max_backoff", "until"}
	hasMax := false
	var backoff, maxBackoff *yaml.Node
	for _, f := range Fields(r, n, "retry") {
		switch f.Key {
		case "max":
			hasMax = true
			if v, ok := Int(r, f.Value, "retry.max"); ok {
				if v < 0 {
					r.At(f.Value, "retry.max must not be negative")
				}
				rt.Max = v
			}
		case "backoff":
			rt.Backoff, _ = Duration(r, f.Value, "retry.backoff")
			backoff = f.Value
		case "max_backoff":
			rt.MaxBackoff, _ = Duration(r, f.Value, "retry.max_backoff")
			maxBackoff = f.Value
		case "until":
			rt.Until = expr(r, f.Value, "retry.until")
		default:
			Unknown(r, f, "retry", known)
		}
	}
	if !hasMax {
		r.At(n, "retry is missing required field \"max\"")
	}
	if backoff != nil && maxBackoff != nil && rt.MaxBackoff > 0 && rt.MaxBackoff < rt.Backoff {
		// Every wait would be max_backoff: backoff would mean nothing.
		r.At(maxBackoff, "retry.max_backoff %s is shorter than retry.backoff %s, the first wait", rt.MaxBackoff, rt.Backoff)
	}
	return rt
}

func parseWrite(r *Reporter, n *yaml.Node) *Write {
	w := &Write{Section: "steps"}
	known := []string{"section", "key", "ttl"}
	for _, f := range Fields(r, n, "write") {
		switch f.Key {
		case "section":
			w.Section, _ = String(r, f.Value, "write.section")
		case "key":
			w.Key, _ = String(r, f.Value, "write.key")
			w.KeyNode = Resolve(f.Value)
		case "ttl":
			w.TTL, _ = Duration(r, f.Value, "write.ttl")
		default:
			Unknown(r, f, "write", known)
		}
	}
	return w
}

func parseAgents(r *Reporter, n *yaml.Node) []*Agent {
	var out []*Agent
	for _, f := range Fields(r, n, "agents") {
		if !ValidIdent(f.Key) {
			r.At(f.KeyN, "agent name %q must be letters, digits and _", f.Key)
		}
		out = append(out, parseAgent(r, f.Key, f.Value))
	}
	checkFallbacks(r, out)
	checkSpawns(r, out)
	return out
}

// checkSpawns checks that the agents each agent may spawn are agents of
// the plan.
func checkSpawns(r *Reporter, all []*Agent) {
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Name
	}
	for _, a := range all {
		for _, sp := range a.Spawns {
			if !contains(names, sp) {
				r.At(a.SpawnsNode, "agent %s: spawns: no agent named %q in the plan's agents%s", a.Name, sp, Suggest(sp, names))
			}
		}
	}
}

// checkFallbacks checks that each agent's fallbacks are other agents of
// the plan.
func checkFallbacks(r *Reporter, all []*Agent) {
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Name
	}
	for _, a := range all {
		if len(a.Fallback) == 0 || a.Node == nil || a.Node.Kind != yaml.MappingNode {
			continue
		}
		var at *yaml.Node
		for i := 0; i+1 < len(a.Node.Content); i += 2 {
			if a.Node.Content[i].Value == "fallback" {
				at = Resolve(a.Node.Content[i+1])
			}
		}
		for i, fb := range a.Fallback {
			n := at
			if at != nil && at.Kind == yaml.SequenceNode && i < len(at.Content) {
				n = at.Content[i]
			}
			switch {
			case fb == a.Name:
				r.At(n, "agent %s: fallback: an agent cannot be its own fallback", a.Name)
			case !contains(names, fb):
				r.At(n, "agent %s: fallback: no agent named %q in the plan's agents%s", a.Name, fb, Suggest(fb, names))
			}
		}
	}
}

var agentFields = []string{"provider", "model", "system", "temperature", "max_tokens", "seed",
	"base_url", "api_key_env", "timeout", "responses", "board", "subscribe", "fallback", "price", "mcp", "tools", "memory",
	"stream", "thinking", "approve", "spawns", "api", "reasoning_effort", "prompt_cache_key", "batch"}

func parseAgent(r *Reporter, name string, n *yaml.Node) *Agent {
	a := &Agent{Name: name, Node: Resolve(n)}
	what := "agent " + name
	var responses *yaml.Node
	var openaiOnly []Field
	var batchNode *yaml.Node
	for _, f := range Fields(r, n, what) {
		switch f.Key {
		case "api", "reasoning_effort", "prompt_cache_key":
			openaiOnly = append(openaiOnly, f)
		}
		switch f.Key {
		case "provider":
			if v, ok := String(r, f.Value, what+": provider"); ok {
				a.Provider = v
				if !contains(Providers, v) {
					r.At(f.Value, "%s: unknown provider %q (one of %s)%s", what, v, strings.Join(Providers, ", "), Suggest(v, Providers))
				}
			}
		case "model":
			a.Model, _ = String(r, f.Value, what+": model")
		case "system":
			a.System, _ = String(r, f.Value, what+": system")
		case "temperature":
			if v, ok := Float(r, f.Value, what+": temperature"); ok {
				if v < 0 || v > 2 {
					r.At(f.Value, "%s: temperature %v is outside 0..2", what, v)
				}
				a.Temperature = &v
			}
		case "max_tokens":
			if v, ok := Int(r, f.Value, what+": max_tokens"); ok {
				if v < 1 {
					r.At(f.Value, "%s: max_tokens must be at least 1", what)
				}
				a.MaxTokens = v
			}
		case "seed":
			if v, ok := Int(r, f.Value, what+": seed"); ok {
				a.Seed = &v
			}
		case "base_url":
			a.BaseURL, _ = String(r, f.Value, what+": base_url")
		case "api_key_env":
			if v, ok := String(r, f.Value, what+": api_key_env"); ok {
				if !ValidIdent(v) {
					r.At(f.Value, "%s: api_key_env %q is not an environment variable name", what, v)
				}
				a.APIKeyEnv = v
			}
		case "timeout":
			a.Timeout, _ = Duration(r, f.Value, what+": timeout")
		case "responses":
			responses = f.Value
		case "board":
			a.Board = parseAgentBoard(r, f.Value, what)
		case "subscribe":
			a.Subscribe = StringList(r, f.Value, what+": subscribe")
		case "fallback":
			a.Fallback = StringList(r, f.Value, what+": fallback")
		case "spawns":
			a.SpawnsNode = Resolve(f.Value)
			a.Spawns = StringList(r, f.Value, what+": spawns")
		case "price":
			a.Price = parsePrice(r, f.Value, what)
		case "stream":
			a.Stream, _ = Bool(r, f.Value, what+": stream")
		case "batch":
			if a.Batch, _ = Bool(r, f.Value, what+": batch"); a.Batch {
				batchNode = f.Value
			}
		case "thinking":
			if v, ok := Int(r, f.Value, what+": thinking"); ok {
				if v < 1024 {
					r.At(f.Value, "%s: thinking is a token budget of at least 1024", what)
				}
				a.Thinking = v
			}
		case "mcp":
			a.MCP = parseMCP(r, f.Value, what)
		case "memory":
			a.Memory = parseMemory(r, f.Value, what)
		case "tools":
			a.ToolsNode = Resolve(f.Value)
			a.Tools = StringList(r, f.Value, what+": tools")
		case "api":
			if v, ok := String(r, f.Value, what+": api"); ok {
				a.API = v
				if v != APIResponses && v != APIChat {
					r.At(f.Value, "%s: unknown api %q (responses or chat)%s", what, v, Suggest(v, []string{APIResponses, APIChat}))
				}
			}
		case "reasoning_effort":
			if v, ok := String(r, f.Value, what+": reasoning_effort"); ok {
				a.ReasoningEffort = v
				if !contains(ReasoningEfforts, v) {
					r.At(f.Value, "%s: unknown reasoning_effort %q (one of %s)%s", what, v, strings.Join(ReasoningEfforts, ", "), Suggest(v, ReasoningEfforts))
				}
			}
		case "prompt_cache_key":
			a.PromptCacheKey, _ = String(r, f.Value, what+": prompt_cache_key")
		case "approve":
			a.Approve, a.ApproveAnswerers = parseApprove(r, f.Value, what)
		default:
			Unknown(r, f, what, agentFields)
		}
	}
	switch {
	case a.Provider == "" && a.Node != nil:
		r.At(a.Node, "%s is missing required field \"provider\" (openai, anthropic, script or a2a)", what)
	case a.Provider == "script":
		if responses == nil {
			r.At(a.Node, "%s: the script provider needs responses (a list, a mapping of step label to answers, or a file name)", what)
		} else {
			a.Responses, a.ResponsesFile = parseResponses(r, responses, what)
		}
	case a.Provider == "a2a":
		// A remote agent picks its own model: model, when given, only
		// names it in reports and recordings.
		if a.BaseURL == "" {
			r.At(a.Node, "%s: the a2a provider needs base_url, the remote agent's URL (its card is at BASE_URL/.well-known/agent-card.json)", what)
		}
		if responses != nil {
			r.At(responses, "%s: responses are for the script provider only", what)
		}
	case a.Provider != "":
		if a.Model == "" {
			r.At(a.Node, "%s is missing required field \"model\"", what)
		}
		if responses != nil {
			r.At(responses, "%s: responses are for the script provider only", what)
		}
	}
	if a.Provider != "openai" && a.Provider != "" {
		for _, f := range openaiOnly {
			r.At(f.Value, "%s: %s is for the openai provider only", what, f.Key)
		}
	}
	if batchNode != nil && a.Provider != "openai" && a.Provider != "anthropic" && a.Provider != "" {
		r.At(batchNode, "%s: batch is for the openai and anthropic providers, which have a batch API", what)
	}
	if a.Provider == "a2a" && (len(a.MCP) > 0 || len(a.Tools) > 0 || a.Stream) {
		r.At(a.Node, "%s: a remote A2A agent uses its own tools and answers whole: mcp, tools and stream are not for the a2a provider", what)
	}
	if a.Thinking > 0 {
		switch {
		case a.Provider != "anthropic":
			r.At(a.Node, "%s: thinking is for the anthropic provider", what)
		case a.MaxTokens > 0 && a.MaxTokens <= a.Thinking:
			r.At(a.Node, "%s: max_tokens (%d) must be more than the thinking budget (%d): the answer comes out of what is left", what, a.MaxTokens, a.Thinking)
		case a.Temperature != nil:
			r.At(a.Node, "%s: temperature cannot be set with thinking (the API allows only its default then)", what)
		}
	}
	return a
}

// parseNotify reads the plan's notify: a list of targets.
func parseNotify(r *Reporter, n *yaml.Node) []*Notify {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		r.At(n, "notify must be a list of targets (each with url or url_env)")
		return nil
	}
	var out []*Notify
	for _, item := range n.Content {
		t := &Notify{Node: Resolve(item), Format: "json"}
		what := "notify"
		for _, f := range Fields(r, item, what) {
			switch f.Key {
			case "url":
				if v, ok := String(r, f.Value, what+": url"); ok {
					if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						r.At(f.Value, "%s: url %q is not an http(s) URL", what, v)
					}
					t.URL = v
				}
			case "url_env":
				if v, ok := String(r, f.Value, what+": url_env"); ok {
					if !ValidIdent(v) {
						r.At(f.Value, "%s: url_env %q is not an environment variable name", what, v)
					}
					t.URLEnv = v
				}
			case "format":
				if v, ok := String(r, f.Value, what+": format"); ok {
					if v != "json" && v != "slack" {
						r.At(f.Value, "%s: format %q is not json or slack", what, v)
					}
					t.Format = v
				}
			case "on":
				t.On = StringList(r, f.Value, what+": on")
				for _, e := range t.On {
					if !contains(NotifyEvents, e) {
						r.At(f.Value, "%s: on: unknown event %q (waiting, failed, ended)%s", what, e, Suggest(e, NotifyEvents))
					}
				}
			case "link":
				for _, lf := range Fields(r, f.Value, what+": link") {
					switch lf.Key {
					case "base":
						if v, ok := String(r, lf.Value, what+": link.base"); ok {
							if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
								r.At(lf.Value, "%s: link.base %q is not the http(s) URL of runner serve", what, v)
							}
							t.LinkBase = v
						}
					case "ttl":
						t.LinkTTL, _ = Duration(r, lf.Value, what+": link.ttl")
					default:
						Unknown(r, lf, what+": link", []string{"base", "ttl"})
					}
				}
				if t.LinkBase == "" {
					r.At(f.Value, "%s: link needs base, the URL runner serve is reached at", what)
				}
			default:
				Unknown(r, f, what, []string{"url", "url_env", "format", "on", "link"})
			}
		}
		if (t.URL == "") == (t.URLEnv == "") && t.Node != nil && t.Node.Kind == yaml.MappingNode {
			r.At(t.Node, "%s: give url or url_env (one of them)", what)
		}
		out = append(out, t)
	}
	return out
}

// parseApprove reads an agent's approve: a list of tool patterns, or a
// mapping of them (tools) and who may allow the calls (answerers).
func parseApprove(r *Reporter, n *yaml.Node, what string) (tools, answerers []string) {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		tools = StringList(r, n, what+": approve")
	} else {
		for _, f := range Fields(r, n, what+": approve") {
			switch f.Key {
			case "tools":
				tools = StringList(r, f.Value, what+": approve.tools")
			case "answerers":
				answerers = StringList(r, f.Value, what+": approve.answerers")
			default:
				Unknown(r, f, what+": approve", []string{"tools", "answerers"})
			}
		}
	}
	for _, p := range tools {
		if _, err := path.Match(p, ""); err != nil {
			r.At(n, "%s: approve: bad pattern %q: %v", what, p, err)
		}
	}
	if len(tools) == 0 && n != nil {
		r.At(n, "%s: approve names no tool pattern", what)
	}
	return tools, answerers
}

func parsePrice(r *Reporter, n *yaml.Node, what string) *Price {
	p := &Price{Node: Resolve(n)}
	seen := 0
	for _, f := range Fields(r, n, what+": price") {
		var dst *float64
		switch f.Key {
		case "input":
			dst = &p.Input
			seen++
		case "output":
			dst = &p.Output
			seen++
		case "cached_input":
			p.CachedInput = new(float64)
			dst = p.CachedInput
		case "cache_write":
			p.CacheWrite = new(float64)
			dst = p.CacheWrite
		default:
			Unknown(r, f, what+": price", []string{"input", "output", "cached_input", "cache_write"})
			continue
		}
		if v, ok := Float(r, f.Value, what+": price."+f.Key); ok {
			if v < 0 {
				r.At(f.Value, "%s: price.%s must not be negative", what, f.Key)
			}
			*dst = v
		}
	}
	if seen < 2 && p.Node != nil {
		r.At(p.Node, "%s: price needs both input and output (US dollars per million tokens)", what)
	}
	return p
}

func parseAgentBoard(r *Reporter, n *yaml.Node, what string) AgentBoard {
	var b AgentBoard
	for _, f := range Fields(r, n, what+": board") {
		switch f.Key {
		case "read":
			b.Read = StringList(r, f.Value, what+": board.read")
		case "write":
			b.Write = StringList(r, f.Value, what+": board.write")
		default:
			Unknown(r, f, what+": board", []string{"read", "write"})
		}
	}
	return b
}

// StringList reads a list of strings (a single string is a list of one),
// reporting problems to r.
func StringList(r *Reporter, n *yaml.Node, what string) []string {
	n = Resolve(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		s, _ := String(r, n, what)
		return []string{s}
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		r.At(n, "%s must be a list of strings, got %s", what, KindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		if s, ok := String(r, c, what); ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// secondDocument is the line where the file's second YAML document starts:
// the `---` after some content.
func secondDocument(src string) int {
	content := false
	for i, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "---") && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r'):
			if content {
				return i + 1
			}
			content = true // the first document's own marker
		case t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(l, "%"):
			content = true
		}
	}
	return 1
}

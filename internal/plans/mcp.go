package plans

import (
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// MCPServer is an MCP server an agent may use tools of: a command that
// speaks stdio, or a streamable HTTP endpoint.
type MCPServer struct {
	Name    string
	Command []string
	// Env is the server's environment beside PATH, HOME, LANG and
	// TMPDIR; a value may insert a secret with ${{ secrets.NAME }}.
	Env map[string]string
	URL string
	// Headers go with every HTTP request; values may insert secrets too.
	Headers map[string]string
	// Scope is when the server starts and ends: "run" (once, at the first
	// step that needs it, until the run ends) or "step" (for each step
	// visit that needs it).
	Scope string
	// StartTimeout bounds starting the server and listing its tools,
	// CallTimeout one tool call (0: the mcp package's defaults).
	StartTimeout time.Duration
	CallTimeout  time.Duration
	Node         *yaml.Node
}

// MCP scopes.
const (
	ScopeRun  = "run"
	ScopeStep = "step"
)

var mcpFields = []string{"name", "command", "env", "url", "headers", "scope", "start_timeout", "call_timeout"}

var secretRefRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)
})

// SecretRefs returns the secrets a value inserts (${{ secrets.NAME }}),
// and the first ${{ }} in it that is not such a reference ("" if none).
func SecretRefs(v string) (names []string, bad string) {
	for _, m := range secretRefRE().FindAllStringSubmatch(v, -1) {
		name, ok := strings.CutPrefix(m[1], "secrets.")
		if !ok || !ValidIdent(name) {
			if bad == "" {
				bad = m[0]
			}
			continue
		}
		names = append(names, name)
	}
	return names, bad
}

// ExpandSecrets replaces each ${{ secrets.NAME }} in v with getenv(NAME).
func ExpandSecrets(v string, getenv func(string) string) string {
	return secretRefRE().ReplaceAllStringFunc(v, func(m string) string {
		inner := secretRefRE().FindStringSubmatch(m)[1]
		if name, ok := strings.CutPrefix(inner, "secrets."); ok {
			return getenv(name)
		}
		return m
	})
}

func parseMCP(r *Reporter, n *yaml.Node, what string) []*MCPServer {
	n = Resolve(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		r.At(n, "%s: mcp must be a list of servers ({name, command} or {name, url}), got %s", what, KindName(n))
		return nil
	}
	var out []*MCPServer
	seen := map[string]bool{}
	for i, item := range n.Content {
		s := &MCPServer{Node: Resolve(item), Scope: ScopeRun}
		where := what + ": mcp[" + itoa(i) + "]"
		var cmdNode *yaml.Node
		for _, f := range Fields(r, item, where) {
			switch f.Key {
			case "name":
				if v, ok := String(r, f.Value, where+".name"); ok {
					if !ValidIdent(v) {
						r.At(f.Value, "%s.name %q must be letters, digits and _ (it prefixes the server's tool names)", where, v)
					} else if seen[v] {
						r.At(f.Value, "%s.name: the agent already has a server named %q", where, v)
					}
					seen[v] = true
					s.Name = v
				}
			case "command":
				cmdNode = f.Value
				s.Command = StringList(r, f.Value, where+".command")
			case "env":
				s.Env = stringMap(r, f.Value, where+".env")
			case "url":
				s.URL, _ = String(r, f.Value, where+".url")
				if s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					r.At(f.Value, "%s.url %q must start with http:// or https://", where, s.URL)
				}
			case "headers":
				s.Headers = stringMap(r, f.Value, where+".headers")
			case "scope":
				if v, ok := String(r, f.Value, where+".scope"); ok {
					if v != ScopeRun && v != ScopeStep {
						r.At(f.Value, "%s.scope %q: one of run (the server lives for the run) or step (for each step visit)", where, v)
					}
					s.Scope = v
				}
			case "start_timeout", "call_timeout":
				if d, ok := Duration(r, f.Value, where+"."+f.Key); ok {
					if d <= 0 {
						r.At(f.Value, "%s.%s must be more than 0", where, f.Key)
					}
					if f.Key == "start_timeout" {
						s.StartTimeout = d
					} else {
						s.CallTimeout = d
					}
				}
			default:
				Unknown(r, f, where, mcpFields)
			}
		}
		if s.Node == nil || s.Node.Kind != yaml.MappingNode {
			continue
		}
		switch {
		case s.Name == "":
			r.At(s.Node, "%s is missing required field \"name\"", where)
		}
		switch {
		case cmdNode != nil && s.URL != "":
			r.At(s.Node, "%s has both command and url: a server is one or the other", where)
		case cmdNode == nil && s.URL == "":
			r.At(s.Node, "%s needs command (a stdio server) or url (a streamable HTTP server)", where)
		case cmdNode != nil && (len(s.Command) == 0 || s.Command[0] == ""):
			r.At(cmdNode, "%s.command is empty: give the program and its arguments", where)
		}
		if s.URL != "" && len(s.Env) > 0 {
			r.At(s.Node, "%s: env is for a command; an HTTP server takes headers", where)
		}
		if cmdNode != nil && len(s.Headers) > 0 {
			r.At(s.Node, "%s: headers are for a url; a command takes env", where)
		}
		out = append(out, s)
	}
	return out
}

func stringMap(r *Reporter, n *yaml.Node, what string) map[string]string {
	out := map[string]string{}
	for _, f := range Fields(r, n, what) {
		if v, ok := String(r, f.Value, what+"."+f.Key); ok {
			out[f.Key] = v
		}
	}
	return out
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// checkAgentTools checks, once the whole plan is read, each agent's MCP
// servers' secrets (each a name under the plan's secrets:, so a value
// reaches a server only as a declared, masked secret) and its tool
// patterns (each names one of its servers).
func checkAgentTools(r *Reporter, p *Plan) {
	for _, a := range p.Agents {
		what := "agent " + a.Name
		servers := map[string]bool{}
		var names []string
		for _, s := range a.MCP {
			servers[s.Name] = true
			names = append(names, s.Name)
			check := func(field string, m map[string]string) {
				keys := make([]string, 0, len(m))
				for k := range m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					refs, bad := SecretRefs(m[k])
					if bad != "" {
						r.At(s.Node, "%s: mcp server %s: %s.%s: %s is not allowed here; a server's %s may insert only ${{ secrets.NAME }}", what, s.Name, field, k, bad, field)
					}
					for _, name := range refs {
						if !contains(p.Secrets, name) {
							r.At(s.Node, "%s: mcp server %s: %s.%s uses secrets.%s, which is not in the plan's secrets: list it there (secrets: [%s]) so it is masked", what, s.Name, field, k, name, name)
						}
					}
				}
			}
			check("env", s.Env)
			check("headers", s.Headers)
			for _, arg := range s.Command {
				if strings.Contains(arg, "${{") {
					r.At(s.Node, "%s: mcp server %s: command %q: a secret reaches a server only through env, never its command line (which every process can read)", what, s.Name, arg)
				}
			}
		}
		mcpPatterns := 0
		for _, pat := range a.Tools {
			if PlanToolPattern(pat) {
				checkPlanToolPattern(r, p, a, pat)
				continue
			}
			mcpPatterns++
			srv, tool, ok := strings.Cut(pat, ".")
			if !ok || srv == "" || tool == "" {
				r.At(a.ToolsNode, "%s: tools: %q must be SERVER.TOOL (patterns allowed, e.g. fs.read_* or fs.*)", what, pat)
				continue
			}
			if _, err := path.Match(pat, ""); err != nil {
				r.At(a.ToolsNode, "%s: tools: %q is not a valid pattern: %v", what, pat, err)
				continue
			}
			if !strings.ContainsAny(srv, "*?[") && !servers[srv] {
				if len(names) == 0 {
					r.At(a.ToolsNode, "%s: tools: %q names server %q, but the agent has no mcp servers", what, pat, srv)
				} else {
					r.At(a.ToolsNode, "%s: tools: %q names server %q, which is not one of the agent's mcp servers (%s)%s", what, pat, srv, strings.Join(names, ", "), Suggest(srv, names))
				}
			}
		}
		if len(a.MCP) > 0 && mcpPatterns == 0 {
			r.At(a.Node, "%s lists mcp servers but no tools: an agent may use only the tools it names; add tools: [%s.*] for all of them, or name the ones it needs", what, a.MCP[0].Name)
		}
	}
}

// ToolAllowed reports whether server.tool matches one of patterns.
func ToolAllowed(patterns []string, server, tool string) bool {
	name := server + "." + tool
	for _, p := range patterns {
		if PlanToolPattern(p) {
			continue // a plan tool's name: `*` must not allow every MCP tool
		}
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

package plans

import (
	"fmt"
	"path/filepath"

	"github.com/planrunner/runner/internal/sys/readlimit"
	"gopkg.in/yaml.v3"
)

// parseResponses reads a script agent's answers: a list (served in order),
// a mapping of step label to an answer or a list of answers, or a string
// naming a file that holds either.
func parseResponses(r *Reporter, n *yaml.Node, what string) ([]Response, string) {
	n = Resolve(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		return nil, n.Value
	}
	return ParseResponses(r, n, what), ""
}

// ParseResponses reads a list or label mapping of script answers.
func ParseResponses(r *Reporter, n *yaml.Node, what string) []Response {
	n = Resolve(n)
	var out []Response
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			if resp, ok := parseResponse(r, c, what); ok {
				out = append(out, resp)
			}
		}
	case n != nil && n.Kind == yaml.MappingNode:
		for _, f := range Fields(r, n, what+": responses") {
			items := []*yaml.Node{f.Value}
			if v := Resolve(f.Value); v.Kind == yaml.SequenceNode {
				items = v.Content
			}
			for _, c := range items {
				if resp, ok := parseResponse(r, c, what); ok {
					resp.Label = f.Key
					out = append(out, resp)
				}
			}
		}
	default:
		r.At(n, "%s: responses must be a list, a mapping of step label to answers, or a file name", what)
	}
	return out
}

// parseResponse reads one answer: a string, or {text, tool_calls}.
func parseResponse(r *Reporter, n *yaml.Node, what string) (Response, bool) {
	n = Resolve(n)
	resp := Response{Node: n}
	if n != nil && n.Kind == yaml.ScalarNode {
		resp.Text = n.Value
		return resp, true
	}
	if n == nil || n.Kind != yaml.MappingNode {
		r.At(n, "%s: an answer must be a string or a mapping with text and tool_calls", what)
		return resp, false
	}
	for _, f := range Fields(r, n, what+": answer") {
		switch f.Key {
		case "text":
			resp.Text, _ = String(r, f.Value, what+": text")
		case "tool_calls":
			v := Resolve(f.Value)
			if v.Kind != yaml.SequenceNode {
				r.At(v, "%s: tool_calls must be a list", what)
				continue
			}
			for _, c := range v.Content {
				var tc struct {
					Name string         `yaml:"name"`
					Args map[string]any `yaml:"args"`
				}
				if err := Resolve(c).Decode(&tc); err != nil || tc.Name == "" {
					r.At(c, "%s: a tool call needs name and args", what)
					continue
				}
				resp.ToolCalls = append(resp.ToolCalls, ToolCall{Name: tc.Name, Args: tc.Args})
			}
		default:
			Unknown(r, f, what+": answer", []string{"text", "tool_calls"})
		}
	}
	return resp, true
}

// LoadResponsesFile reads a script agent's responses file (YAML or JSON),
// resolved relative to the plan's directory.
func LoadResponsesFile(planPath, file string) ([]Response, error) {
	if !filepath.IsAbs(file) {
		dir, _ := filepath.Abs(filepath.Dir(planPath))
		file = filepath.Join(dir, file)
		src, err := readlimit.File(file, readlimit.Responses)
		if err != nil {
			return nil, fmt.Errorf("%w (a responses file is relative to the plan's directory, %s)", err, dir)
		}
		return parseResponsesFile(file, src)
	}
	src, err := readlimit.File(file, readlimit.Responses)
	if err != nil {
		return nil, err
	}
	return parseResponsesFile(file, src)
}

func parseResponsesFile(file string, src []byte) ([]Response, error) {
	r := &Reporter{File: file}
	// A file written as JSON (what a program writing answers usually
	// writes) is read without yaml.v3, whose scalars cost about six times
	// their size to read; anything else, or JSON with a mistake in it, is
	// read as YAML, which says where the mistake is.
	doc, ok := jsonNodes(src)
	if !ok {
		var yerr *Error
		if doc, yerr = parseYAML(file, src); yerr != nil {
			r.List = append(r.List, yerr)
			return nil, r.Err()
		}
	}
	if !checkNodes(r, doc) {
		return nil, r.Err()
	}
	out := ParseResponses(r, doc, "responses file")
	return out, r.Err()
}

package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/runs"
)

// candidate is one completion: the word, and what it is (zsh and fish
// show the description).
type candidate struct{ word, desc string }

// completeCommand is the hidden command the completion scripts call:
// `runner __complete WORD... CURRENT` prints one candidate per line
// ("word\tdescription"), then, when file names fit too, a last line
// ":files". Computing candidates here, not in each shell's script, keeps
// the three shells in step with the commands: labels come from the plan or
// saved run named on the line, run ids from ./.runner/runs.
func completeCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{""}
	}
	cands, files := complete(args[:len(args)-1], args[len(args)-1])
	for _, c := range cands {
		if strings.HasPrefix(c.word, args[len(args)-1]) {
			fmt.Fprintf(stdout, "%s\t%s\n", c.word, c.desc)
		}
	}
	if files {
		fmt.Fprintln(stdout, ":files")
	}
	return exitOK
}

// savedRunCommands take a saved run as their first argument.
var savedRunCommands = map[string]bool{"replay": true, "resume": true, "answer": true, "board": true, "report": true}

// planCommands take plan files.
var planCommands = map[string]bool{"run": true, "validate": true, "graph": true}

// boardOps are the operations of `runner board FILE OP`.
var boardOps = []candidate{{"put", "write a key"}, {"get", "read a key"}, {"delete", "delete a key"}, {"lock", "take a lease"}, {"unlock", "release a lease"}, {"list", "list live keys"},
	{"snapshot", "every live key as JSON"}, {"show", "the board as Markdown or JSON"}, {"watch", "follow changes"}, {"conflicts", "lost updates"}}

func complete(words []string, cur string) ([]candidate, bool) {
	// The command, and the positional words after it.
	cmd, pos, prev := "", []string(nil), ""
	if len(words) > 0 {
		prev = words[len(words)-1]
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			if takesValue(cmd, w) && !strings.Contains(w, "=") {
				i++
			}
			continue
		}
		if cmd == "" {
			cmd = w
		} else {
			pos = append(pos, w)
		}
	}
	if cmd == "" {
		if strings.HasPrefix(cur, "-") {
			return flagCandidates(""), false
		}
		var out []candidate
		for _, c := range commands {
			out = append(out, candidate{c.name, c.summary})
		}
		return out, false
	}
	switch prev {
	case "--log-format":
		return words2("console", "json"), false
	case "--log-level":
		return words2("debug", "info", "warn", "error"), false
	case "--format":
		if cmd == "graph" {
			return words2("mermaid", "dot"), false
		}
		return words2("md", "json"), false
	case "--engine":
		return words2("local", "temporal"), false
	case "--status":
		return words2("running", "waiting", "succeeded", "failed", "interrupted"), false
	case "--step", "--from":
		if len(pos) > 0 {
			return labels(cmd, pos[0]), false
		}
		return nil, false
	case "--agent":
		if len(pos) > 0 {
			return agentFields(cmd, pos[0]), false
		}
		return nil, false
	}
	if strings.HasPrefix(prev, "-") && takesValue(cmd, prev) && !strings.Contains(prev, "=") {
		return nil, true // a flag's value: a path or free text
	}
	if strings.HasPrefix(cur, "-") {
		return flagCandidates(cmd), false
	}
	switch {
	case cmd == "completion":
		return words2("bash", "zsh", "fish"), false
	case cmd == "board" && len(pos) == 1:
		return boardOps, false
	case cmd == "board" && len(pos) == 2 && (pos[1] == "get" || pos[1] == "delete" || pos[1] == "put"):
		return boardKeys(pos[0]), false
	case savedRunCommands[cmd] && len(pos) == 0:
		return savedRuns(), true
	case planCommands[cmd] || cmd == "apply":
		return nil, true
	}
	return nil, false
}

func words2(ws ...string) []candidate {
	out := make([]candidate, len(ws))
	for i, w := range ws {
		out[i] = candidate{word: w}
	}
	return out
}

// flagCandidates are a command's flags ("" for the global ones).
func flagCandidates(cmd string) []candidate {
	if cmd == "" {
		return words2("--log-format", "--log-level", "-q", "--help", "--version")
	}
	return words2(flagNames(cmd)...)
}

// takesValue says whether flag f of cmd takes a value (the next word).
func takesValue(cmd, f string) bool {
	name := strings.TrimLeft(f, "-")
	if name == "log-format" || name == "log-level" {
		return true
	}
	for _, line := range strings.Split(helpOf(cmd), "\n") {
		if strings.HasPrefix(line, "  --"+name+" ") || strings.HasPrefix(line, "  -"+name+" ") {
			return true
		}
	}
	return false
}

// savedRuns are the run ids under ./.runner/runs, newest first, and latest.
func savedRuns() []candidate {
	list, _ := runs.List(".")
	out := []candidate{{runs.Latest, "the newest run"}}
	for i := len(list) - 1; i >= 0; i-- {
		r := list[i]
		out = append(out, candidate{r.ID, fmt.Sprintf("%s %s %s", r.Plan, r.Status, r.StartedAt.Local().Format("2006-01-02 15:04"))})
	}
	return out
}

// labels are the step labels of the plan or saved run arg names.
func labels(cmd, arg string) []candidate {
	if !savedRunCommands[cmd] {
		p, err := plans.Load(arg)
		if err != nil {
			return nil
		}
		var out []candidate
		for _, s := range p.AllSteps() {
			out = append(out, candidate{s.Label, s.Type})
		}
		return out
	}
	b := loadQuietly(arg)
	if b == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []candidate
	if cmd == "answer" {
		for _, w := range b.Run().Waiting {
			out = append(out, candidate{w.Label, "waits: " + firstLine(strings.TrimSpace(w.Prompt))})
		}
		return out
	}
	for _, s := range b.Steps() {
		if !seen[s.Label] {
			seen[s.Label] = true
			out = append(out, candidate{s.Label, s.Type})
		}
	}
	return out
}

// agentFields are NAME.FIELD= for every agent of the plan or saved run.
func agentFields(cmd, arg string) []candidate {
	var p *plans.Plan
	if savedRunCommands[cmd] {
		if b := loadQuietly(arg); b != nil {
			p, _ = plans.Parse(b.Run().PlanPath, []byte(b.Run().PlanSource))
		}
	} else {
		p, _ = plans.Load(arg)
	}
	if p == nil {
		return nil
	}
	var out []candidate
	for _, a := range p.AgentNames() {
		for _, f := range plans.OverridableFields() {
			out = append(out, candidate{a + "." + f + "=", ""})
		}
	}
	return out
}

// boardKeys are the live keys of the saved run arg names.
func boardKeys(arg string) []candidate {
	b := loadQuietly(arg)
	if b == nil {
		return nil
	}
	var out []candidate
	for _, k := range b.Keys("") {
		out = append(out, candidate{k.Key, fmt.Sprintf("v%d by %s", k.Version, k.Author)})
	}
	return out
}

func loadQuietly(arg string) *board.Board {
	path, err := runs.Resolve(arg, ".")
	if err != nil {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	b, err := board.Load(path)
	if err != nil {
		return nil
	}
	return b
}

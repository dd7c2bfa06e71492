package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
)

// examples are what each subcommand's --help shows under its usage line.
var examples = map[string][]string{
	"run": {"runner run examples/fix-tests/plan.yaml",
		"runner run plan.yaml --var task='Make TestAdd pass' --report",
		"runner run examples/fix-tests/plan.yaml --agent coder.provider=openai"},
	"validate":   {"runner validate plans/*.yaml"},
	"replay":     {"runner replay .runner/runs/ID/blackboard.json --offline", "runner replay bb.json --workdir . --from fix#2 --agent coder.model=gpt-4o"},
	"resume":     {"runner resume .runner/runs/ID/blackboard.json"},
	"apply":      {"runner apply --dir . fix.patch", "git diff | runner apply --check -"},
	"board":      {"runner board .runner/runs/ID/blackboard.json show", "runner board bb.json put plan/status '\"done\"' --ttl 60s"},
	"report":     {"runner report .runner/runs/ID/blackboard.json", "runner report bb.json -o run.html"},
	"graph":      {"runner graph examples/fix-tests/plan.yaml", "runner graph plan.yaml --format dot | dot -Tsvg > plan.svg"},
	"schema":     {"runner schema > plan.schema.json"},
	"version":    {"runner version"},
	"completion": {"runner completion fish > ~/.config/fish/completions/runner.fish", "source <(runner completion bash)"},
	"worker":     {"runner worker --temporal localhost:7233"},
	"runs":       {"runner runs", "runner runs --status failed --json", "runner report latest"},
	"answer":     {"runner answer bb.json --step approve --json '{\"ok\": true}'"},
}

// commandUsage is the usage line and examples of a subcommand, for its
// --help (flag.FlagSet.Usage).
func commandUsage(fs *flag.FlagSet, name string) func() {
	return func() {
		w := fs.Output()
		usageLine, summary := name, ""
		for _, c := range commands {
			if c.name == name {
				usageLine, summary = c.usage, c.summary
			}
		}
		fmt.Fprint(w, wrap("Usage: runner "+usageLine, "    ", helpWidth))
		if summary != "" {
			fmt.Fprintf(w, "\n%s.\n", strings.ToUpper(summary[:1])+summary[1:])
		}
		if ex := examples[name]; len(ex) > 0 {
			fmt.Fprintln(w, "\nExamples:")
			for _, e := range ex {
				fmt.Fprintf(w, "  %s\n", e)
			}
		}
		fmt.Fprintln(w, "\nFlags (before or after the arguments):")
		printFlags(w, fs)
	}
}

// helpWidth is what help is wrapped to: it fits an 80-column terminal.
const helpWidth = 80

// printFlags is flag.PrintDefaults wrapped to helpWidth: each flag on its
// own line, what it does indented below it.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		line := "  " + dash + f.Name
		if arg != "" {
			line += " " + arg
		}
		switch f.DefValue {
		case "", "0", "false", "[]", "0s", "-1":
		default:
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
		fmt.Fprint(w, wrap("      "+text, "      ", helpWidth))
	})
}

// wrap breaks text at spaces into lines of at most width columns (a word
// longer than that stays whole), indenting every line after the first.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = strings.Repeat(" ", len(text)-len(strings.TrimLeft(text, " "))) + word
		case len(line)+1+len(word) > width:
			b.WriteString(line + "\n")
			line = indent + word
		default:
			line += " " + word
		}
	}
	b.WriteString(line + "\n")
	return b.String()
}

// globalFlags are the flags every command takes; given before the
// subcommand they are moved after it.
var globalFlags = map[string]bool{"log-format": true, "log-level": true, "q": false}

// hoistGlobals turns `runner -q --log-format json run x` into
// `runner run -q --log-format json x`.
func hoistGlobals(args []string) ([]string, error) {
	var lead []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-" && args[0] != "-h" && args[0] != "--help" && args[0] != "--version" {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
		takesValue, ok := globalFlags[name]
		if !ok {
			return nil, fmt.Errorf("flag %s is not a global flag (--log-format, --log-level, -q); give it after the command", args[0])
		}
		lead = append(lead, args[0])
		args = args[1:]
		if takesValue && !hasValue {
			if len(args) == 0 {
				return nil, fmt.Errorf("flag %s needs a value", lead[len(lead)-1])
			}
			lead = append(lead, args[0])
			args = args[1:]
		}
	}
	if len(lead) == 0 || len(args) == 0 {
		return append(lead, args...), nil
	}
	return append(append([]string{args[0]}, lead...), args[1:]...), nil
}

// buildVersion is the version the binary says it is: set with -ldflags
// -X main.version=…, else the module version `go install …@vX` recorded in
// the build info, else the commit it was built from.
func buildVersion(set string) string {
	if set != "" && set != "dev" {
		return set
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		return "dev-" + rev + dirty
	}
	return "dev"
}

func init() { version = buildVersion(version) }

// flagNames lists a command's flags, from its own --help, so completion
// never drifts from the commands.
func flagNames(name string) []string {
	for _, c := range commands {
		if c.name != name || name == "completion" {
			continue
		}
		var buf bytes.Buffer
		c.run([]string{"-h"}, strings.NewReader(""), io.Discard, &buf)
		seen := map[string]bool{}
		var out []string
		for _, m := range regexp.MustCompile(`(?m)^  --?(\S+)`).FindAllStringSubmatch(buf.String(), -1) {
			f := "--" + m[1]
			if len(m[1]) == 1 {
				f = "-" + m[1]
			}
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
		sort.Strings(out)
		return out
	}
	return nil
}

func cmdCompletion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("completion", stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one shell: bash, zsh or fish")
	}
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	perCmd := map[string][]string{}
	for _, n := range names {
		perCmd[n] = flagNames(n)
	}
	switch pos[0] {
	case "bash":
		bashCompletion(stdout, names, perCmd)
	case "zsh":
		fmt.Fprintln(stdout, "#compdef runner\nautoload -U +X bashcompinit && bashcompinit")
		bashCompletion(stdout, names, perCmd)
	case "fish":
		fishCompletion(stdout, names, perCmd)
	default:
		return usageErr(stderr, fs, "unknown shell %q: want bash, zsh or fish", pos[0])
	}
	return exitOK
}

func bashCompletion(w io.Writer, names []string, perCmd map[string][]string) {
	fmt.Fprintf(w, `# runner completion for bash (and zsh through bashcompinit).
# source <(runner completion bash)
_runner() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" i
  for ((i=1; i<COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in -*) ;; *) cmd=${COMP_WORDS[i]}; break;; esac
  done
  if [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W "%s --log-format --log-level -q --help --version" -- "$cur"))
    return
  fi
  local flags=""
  case $cmd in
`, strings.Join(names, " "))
	for _, n := range names {
		fmt.Fprintf(w, "    %s) flags=%q;;\n", n, strings.Join(perCmd[n], " "))
	}
	fmt.Fprint(w, `  esac
  case ${COMP_WORDS[COMP_CWORD-1]} in
    --log-format) COMPREPLY=($(compgen -W "console json" -- "$cur")); return;;
    --log-level) COMPREPLY=($(compgen -W "debug info warn error" -- "$cur")); return;;
    --format) COMPREPLY=($(compgen -W "mermaid dot md json" -- "$cur")); return;;
  esac
  if [[ $cmd == completion ]]; then COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return; fi
  if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "$flags" -- "$cur")); return; fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _runner runner
`)
}

func fishCompletion(w io.Writer, names []string, perCmd map[string][]string) {
	fmt.Fprintln(w, "# runner completion for fish: runner completion fish > ~/.config/fish/completions/runner.fish")
	fmt.Fprintf(w, "complete -c runner -n '__fish_use_subcommand' -f -a '%s'\n", strings.Join(names, " "))
	fmt.Fprintln(w, "complete -c runner -l log-format -x -a 'console json'")
	fmt.Fprintln(w, "complete -c runner -l log-level -x -a 'debug info warn error'")
	fmt.Fprintln(w, "complete -c runner -s q")
	fmt.Fprintln(w, "complete -c runner -n '__fish_seen_subcommand_from completion' -f -a 'bash zsh fish'")
	for _, n := range names {
		for _, f := range perCmd[n] {
			if strings.HasPrefix(f, "--") {
				fmt.Fprintf(w, "complete -c runner -n '__fish_seen_subcommand_from %s' -l %s\n", n, f[2:])
			} else {
				fmt.Fprintf(w, "complete -c runner -n '__fish_seen_subcommand_from %s' -s %s\n", n, f[1:])
			}
		}
	}
}

package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/planrunner/runner/internal/sys/boot"
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
	"memory":     {"runner memory list", "runner memory --store research show topic:cache"},
	"report":     {"runner report .runner/runs/ID/blackboard.json", "runner report bb.json -o run.html", "runner report bb.json --format junit -o junit.xml"},
	"eval":       {"runner eval new/blackboard.json --baseline golden/blackboard.json", "runner eval runs/*/blackboard.json --json"},
	"trace":      {"runner trace .runner/runs/ID/blackboard.json -o trace.json", "runner trace bb.json --otlp-endpoint http://localhost:4318"},
	"graph":      {"runner graph examples/fix-tests/plan.yaml", "runner graph plan.yaml --format dot | dot -Tsvg > plan.svg"},
	"schema":     {"runner schema > plan.schema.json"},
	"version":    {"runner version"},
	"completion": {"runner completion fish > ~/.config/fish/completions/runner.fish", "source <(runner completion bash)"},
	"worker":     {"runner worker --temporal localhost:7233"},
	"serve":      {"runner serve", "runner serve --dir ~/project --addr 127.0.0.1:8080"},
	"cost":       {"runner cost", "runner cost --since 30d --json", "runner validate --cost plan.yaml"},
	"runs":       {"runner runs", "runner runs --status failed --limit 20", "runner report latest", "runner runs prune --keep 100 --older-than 30d"},
	"mcp":        {"runner mcp", "runner mcp --http 127.0.0.1:8765 --dir ~/project"},
	"a2a":        {"runner a2a examples/a2a/greet.yaml", "runner a2a plans/*.yaml --http 127.0.0.1:9000 --workdir ~/project"},
	"answer":     {"runner answer bb.json --step approve --json '{\"ok\": true}'"},
}

// commandUsage is the usage line and examples of a subcommand, for its
// --help (flag.FlagSet.Usage), written to w.
func commandUsage(fs *flag.FlagSet, name string, w io.Writer) func() {
	return func() {
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

// flagSections are the flags of a command that belong under a heading of
// their own in its help (those of one engine), by flag set: the common
// flags come first, not lost among them.
var (
	sectionsMu   sync.Mutex
	flagSections = map[*flag.FlagSet][]flagSection{}
)

type flagSection struct {
	heading string
	names   map[string]bool
}

// flagGroup puts the flags that add defines on fs under heading in fs's help.
func flagGroup(fs *flag.FlagSet, heading string, add func()) {
	before := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	add()
	sec := flagSection{heading: heading, names: map[string]bool{}}
	fs.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			sec.names[f.Name] = true
		}
	})
	sectionsMu.Lock()
	flagSections[fs] = append(flagSections[fs], sec)
	sectionsMu.Unlock()
}

// printFlags is flag.PrintDefaults wrapped to helpWidth: each flag on its
// own line, what it does indented below it; the common flags first, then
// each section's under its heading.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	sectionsMu.Lock()
	secs := flagSections[fs]
	sectionsMu.Unlock()
	inSection := map[string]bool{}
	for _, sec := range secs {
		for n := range sec.names {
			inSection[n] = true
		}
	}
	printFlagsIf(w, fs, func(f *flag.Flag) bool { return !inSection[f.Name] })
	for _, sec := range secs {
		fmt.Fprintf(w, "\n%s:\n", sec.heading)
		printFlagsIf(w, fs, func(f *flag.Flag) bool { return sec.names[f.Name] })
	}
}

func printFlagsIf(w io.Writer, fs *flag.FlagSet, keep func(*flag.Flag) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f) {
			return
		}
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
	n := 1
	if args[0] == "help" && len(args) > 1 {
		n = 2 // runner -q help run is runner help run -q
	}
	return append(append(append([]string{}, args[:n]...), lead...), args[n:]...), nil
}

// buildVersion is the version the binary says it is: set with -ldflags
// -X main.version=…, else the module version `go install …@vX` recorded in
// the build info, else the commit it was built from.
func buildVersion(set string) string {
	if set != "" && set != "dev" {
		return set
	}
	module, rev, modified := boot.BuildInfo()
	switch {
	case module != "":
		return module
	case rev != "" && modified:
		return "dev-" + rev + "-dirty"
	case rev != "":
		return "dev-" + rev
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
		seen := map[string]bool{}
		var out []string
		for _, m := range regexp.MustCompile(`(?m)^  --?(\S+)`).FindAllStringSubmatch(helpOf(name), -1) {
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

// helpOf is what `runner NAME --help` prints.
func helpOf(name string) string {
	for _, c := range commands {
		if c.name == name && name != "completion" {
			var buf bytes.Buffer
			c.run([]string{"-h"}, strings.NewReader(""), &buf, io.Discard)
			return buf.String()
		}
	}
	return ""
}

func cmdCompletion(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, _ := newFlags("completion", stdout, stderr)
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one shell: bash, zsh or fish")
	}
	script, ok := completionScripts[pos[0]]
	if !ok {
		return usageErr(stderr, fs, "unknown shell %q: want bash, zsh or fish", pos[0])
	}
	fmt.Fprint(stdout, script)
	return exitOK
}

// completionScripts ask `runner __complete` (complete.go) for the
// candidates, so every shell completes the same things: commands,
// flags, run ids, board operations and keys, step labels, agent fields,
// and file names only where a file is expected.
var completionScripts = map[string]string{
	"bash": `# runner completion for bash: source <(runner completion bash)
_runner() {
  local line=${COMP_LINE:0:COMP_POINT} files=0 word desc
  local -a words
  read -ra words <<< "$line"
  [[ $line == *[[:space:]] ]] && words+=("")
  local cur=${words[${#words[@]}-1]}
  COMPREPLY=()
  while IFS=$'\t' read -r word desc; do
    if [[ $word == :files ]]; then files=1; continue; fi
    COMPREPLY+=("$word")
  done < <(runner __complete "${words[@]:1}" 2>/dev/null)
  if ((files)); then
    compopt -o filenames 2>/dev/null
    local f
    while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -f -- "$cur")
  fi
  # bash splits words at : and =; complete only what follows the last one.
  local pre=${cur%"${cur##*[:=]}"}
  [[ -n $pre ]] && COMPREPLY=("${COMPREPLY[@]#"$pre"}")
  [[ ${#COMPREPLY[@]} == 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
  return 0
}
complete -F _runner runner
`,
	"zsh": `#compdef runner
# runner completion for zsh: source <(runner completion zsh), or save it
# as _runner in a directory of $fpath.
_runner() {
  local -a cands
  local line out files=0
  out=$(runner __complete "${(@)words[2,CURRENT-1]}" "${words[CURRENT]}" 2>/dev/null)
  for line in ${(f)out}; do
    if [[ $line == :files ]]; then files=1; continue; fi
    cands+=("${${line%%$'\t'*}//:/\\:}:${line#*$'\t'}")
  done
  (( ${#cands} )) && _describe -t values runner cands
  (( files )) && _files
  return 0
}
if [[ $funcstack[1] == _runner ]]; then _runner "$@"; else compdef _runner runner; fi
`,
	"fish": `# runner completion for fish: runner completion fish > ~/.config/fish/completions/runner.fish
function __runner_complete
  set -l tokens (commandline -opc)
  set -e tokens[1]
  set -l cur (commandline -ct)
  runner __complete $tokens $cur 2>/dev/null | while read -l line
    if test "$line" = ":files"
      __fish_complete_path $cur
    else
      echo $line
    end
  end
end
complete -c runner -f -a '(__runner_complete)'
`,
}

package shellsafe

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// What runner knows of commands: which run their arguments or input as
// code, how interpreters read their options, which run other commands.
// A command not named here takes its arguments as data (see
// shellplace.go for what that leaves to the plan's author).
// readsInput reports whether a word names the process's input (or another
// inherited descriptor) as a file.
func readsInput(c cword) bool {
	if !c.static {
		return false
	}
	return c.lit == "-" || c.lit == "/dev/stdin" || strings.HasPrefix(c.lit, "/dev/fd/") || strings.HasPrefix(c.lit, "/proc/self/fd/")
}

// An interpreter reads options, then runs a program: given in an option
// (python -c CODE), as its first operand (sh -c CODE, awk PROG), or from
// the file its first operand names, or from its input.
type langSpec struct {
	mode      string   // letters that make the first operand the program text (sh -c)
	code      string   // letters whose argument is program text (python -c, perl -e)
	codeLong  []string // long options whose argument is program text
	prog      string   // letters whose argument names code to load (python -m, awk -f, perl -M)
	progLong  []string
	arg       string         // letters taking an argument
	argLong   []string       // long options taking an argument
	data      string         // letters whose argument is data (awk -v)
	dataLong  map[string]int // long options followed by n data words (jq --arg NAME VALUE)
	stdinFlag string         // letters meaning the program comes from the input (sh -s)
	plus      bool           // options may also start with + (shells)
	permute   bool           // options may come after operands (GNU getopt)
	progEnds  bool           // options end with the program (python -c CODE args)
	text      bool           // the first operand is program text, not a file (awk, sed, jq)
	noInput   bool           // the input is data, never the program
	hint      string         // how to hand a value over instead
	what      string         // the language, for messages
}

var (
	shellSpec = &langSpec{mode: "c", stdinFlag: "s", arg: "oO", argLong: []string{"--rcfile", "--init-file"}, plus: true,
		what: "shell", hint: `pass the value as an argument after the script (sh -c '… "$1"' sh ${{ … }}) or through the step's env`}
	// interps, interpPattern and runners are built on first use: a
	// command step's check needs them, runner version and most commands
	// do not (start-up, docs/benchmarks.md).
	interps = sync.OnceValue(func() map[string]*langSpec {
		m := map[string]*langSpec{
			"fish": {code: "cC", codeLong: []string{"--command", "--init-command"}, what: "fish", hint: "pass the value as an argument after the script or through the step's env"},
			"csh":  {code: "c", what: "csh", hint: "pass the value through the step's env"},
			"tcsh": {code: "c", what: "csh", hint: "pass the value through the step's env"},
			"perl": {code: "eE", prog: "Mm", arg: "I", what: "Perl", hint: "pass the value as an argument after the program (perl -e '… $ARGV[0]' ${{ … }}) or through the step's env ($ENV{NAME})"},
			"ruby": {code: "e", prog: "r", arg: "ICE", what: "Ruby", hint: "pass the value as an argument after the program (ruby -e '… ARGV[0]' ${{ … }}) or through the step's env"},
			"node": {code: "ep", codeLong: []string{"--eval", "--print"}, prog: "r", progLong: []string{"--require", "--import", "--loader", "--experimental-loader"},
				arg: "C", argLong: []string{"--conditions", "--inspect-port", "--title"}, what: "JavaScript",
				hint: "pass the value as an argument after the program (node -e '… process.argv[1]' ${{ … }}) or through the step's env"},
			"php":       {code: "rBRE", prog: "fd", arg: "cz", what: "PHP", hint: "pass the value as an argument after the program or through the step's env"},
			"lua":       {code: "e", prog: "l", what: "Lua", hint: "pass the value as an argument after the program or through the step's env"},
			"luajit":    {code: "e", prog: "lj", what: "Lua", hint: "pass the value as an argument after the program or through the step's env"},
			"Rscript":   {code: "e", what: "R", hint: "pass the value as an argument after the program (commandArgs()) or through the step's env"},
			"R":         {code: "e", progLong: []string{"--file"}, what: "R", hint: "pass the value through the step's env"},
			"julia":     {code: "eE", codeLong: []string{"--eval", "--print"}, prog: "L", progLong: []string{"--load"}, what: "Julia", hint: "pass the value as an argument after the program (ARGS) or through the step's env"},
			"tclsh":     {what: "Tcl", hint: "pass the value as an argument after the script or through the step's env"},
			"wish":      {what: "Tcl", hint: "pass the value as an argument after the script or through the step's env"},
			"expect":    {code: "c", prog: "f", what: "Expect", hint: "pass the value as an argument after the script or through the step's env"},
			"osascript": {code: "e", what: "AppleScript", hint: "pass the value as an argument after the script or through the step's env"},
			"awk": {code: "e", codeLong: []string{"--source"}, prog: "fiEl", progLong: []string{"--file", "--include", "--exec", "--load"},
				data: "vF", dataLong: map[string]int{"--assign": 1, "--field-separator": 1}, arg: "W", text: true, noInput: true, what: "awk",
				hint: "pass the value as a variable: awk -v name=${{ … }} '… name …'"},
			"sed": {code: "e", codeLong: []string{"--expression"}, prog: "f", progLong: []string{"--file"}, arg: "l", argLong: []string{"--line-length"},
				text: true, noInput: true, permute: true, what: "sed",
				hint: "sed has no way to take a value as data inside its script (its e and w commands run and write); use awk -v name=${{ … }}, or put file names after --"},
			"jq": {prog: "f", progLong: []string{"--from-file"}, arg: "L", argLong: []string{"--indent", "--tab"},
				dataLong: map[string]int{"--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2},
				text:     true, noInput: true, permute: true, what: "jq",
				hint: "pass the value with jq --arg name ${{ … }} '… $name …' (--argjson for JSON), and file names after --"},
		}
		m["python"] = &langSpec{code: "c", prog: "m", arg: "WX", argLong: []string{"--check-hash-based-pycs"}, progEnds: true, what: "Python",
			hint: "pass the value as an argument after the program (python3 -c '… sys.argv[1]' ${{ … }}) or through the step's env (os.environ)"}
		for _, sh := range []string{"sh", "bash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash", "posh", "rbash"} {
			m[sh] = shellSpec
		}
		return m
	})
	interpPattern = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(?:(python|pypy|ipython|jython|micropython)[0-9.]*|(perl|ruby|php|lua|tclsh|node|nodejs)[0-9.]*|(gawk|mawk|nawk|busybox-awk)|(gsed))$`)
	})
)

// interpreterSpec is how the named program reads its program, or nil.
func interpreterSpec(name string) *langSpec {
	if s := interps()[name]; s != nil {
		return s
	}
	m := interpPattern().FindStringSubmatch(name)
	switch {
	case m == nil:
		return nil
	case m[1] != "":
		return interps()["python"]
	case m[2] == "nodejs":
		return interps()["node"]
	case m[2] != "":
		return interps()[m[2]]
	case m[3] != "":
		return interps()["awk"]
	case m[4] != "":
		return interps()["sed"]
	}
	return nil
}

// roles of an interpreter's words
const (
	rOperand = iota // data for the program
	rOption         // an option word
	rOptArg         // an option's argument
	rData           // an option's argument that is data (awk -v)
	rCode           // program text
	rProg           // names the program, or code to load
	rUnknown        // only known at run time where options are read
)

func (w *walker) checkInterp(ws []cword, start, target int, sp *langSpec, name string) verdict {
	roles := make([]int, len(ws))
	by := make([]string, len(ws)) // the option that gave a word its role
	var operands []int
	modeBy := ""
	haveProg, mode, fromInput, endOpts := false, false, false, false
	unknownAt := -1
	for i := start + 1; i < len(ws); i++ {
		if endOpts || (!sp.permute && len(operands) > 0) || (sp.progEnds && haveProg) {
			operands = append(operands, i)
			continue
		}
		wd := ws[i]
		lit := wd.lit
		if !wd.static {
			if wd.lead != "" && !strings.HasPrefix(wd.lead, "-") && !(sp.plus && strings.HasPrefix(wd.lead, "+")) {
				operands = append(operands, i)
				continue
			}
			if !strings.HasPrefix(wd.lead, "--") || !strings.Contains(wd.lead, "=") {
				roles[i] = rUnknown
				if unknownAt < 0 {
					unknownAt = i
				}
				if !sp.permute {
					// whether later words are options or operands depends on it
					for j := i + 1; j < len(ws); j++ {
						roles[j] = rUnknown
					}
					break
				}
				continue
			}
			lit = wd.lead
		}
		if lit == "--" {
			roles[i] = rOption
			endOpts = true
			continue
		}
		if lit == "-" || len(lit) < 2 || !(lit[0] == '-' || sp.plus && lit[0] == '+') {
			operands = append(operands, i)
			continue
		}
		roles[i] = rOption
		opt := lit
		next := func(role int) {
			if i+1 < len(ws) {
				roles[i+1] = role
				by[i+1] = opt
			}
			i++
		}
		if strings.HasPrefix(lit, "--") {
			opt, _, eq := strings.Cut(lit, "=")
			switch {
			case in(sp.codeLong, opt), in(sp.progLong, opt):
				role := rCode
				if in(sp.progLong, opt) {
					role = rProg
				}
				haveProg = true
				if eq {
					roles[i] = role
					by[i] = opt
				} else {
					next(role)
				}
			case sp.dataLong[opt] > 0 && !eq:
				for k := 0; k < sp.dataLong[opt]; k++ {
					next(rData)
				}
			case sp.dataLong[opt] > 0:
				roles[i] = rData
			case in(sp.argLong, opt) && !eq:
				next(rOptArg)
			}
			continue
		}
	cluster:
		for k := 1; k < len(lit); k++ {
			c := lit[k]
			switch {
			case strings.IndexByte(sp.mode, c) >= 0:
				mode = true
				modeBy = lit
			case strings.IndexByte(sp.stdinFlag, c) >= 0:
				fromInput = true
			case strings.IndexByte(sp.code, c) >= 0 || strings.IndexByte(sp.prog, c) >= 0:
				role := rCode
				if strings.IndexByte(sp.prog, c) >= 0 {
					role = rProg
				}
				haveProg = true
				if k+1 < len(lit) || !wd.static {
					roles[i] = role
					by[i] = lit
				} else {
					next(role)
				}
				break cluster
			case strings.IndexByte(sp.data, c) >= 0:
				if k+1 < len(lit) || !wd.static {
					roles[i] = rData
				} else {
					next(rData)
				}
				break cluster
			case strings.IndexByte(sp.arg, c) >= 0:
				if k+1 == len(lit) && wd.static {
					next(rOptArg)
				}
				break cluster
			}
		}
	}
	if unknownAt >= 0 {
		if target == input || target >= unknownAt || sp.permute {
			if target == unknownAt {
				if mode || roles[target] == rCode {
					return refuse(name + " " + modeBy + " runs its first argument as " + sp.what + " code, and a value here would be that code (or an option); " + sp.hint)
				}
				return refuse(name + " reads its options here, and a value here could be an option that runs code (such as -c or -e); " + sp.hint)
			}
			return refuse("a word of this " + name + " command before the value is only known when the script runs and could be an option that changes what is code (such as -c or -e); write the options out")
		}
	}
	if mode && len(operands) > 0 {
		roles[operands[0]] = rCode
		by[operands[0]] = modeBy
		operands = operands[1:]
		haveProg = true
	}
	if !haveProg && !fromInput {
		if len(operands) == 0 {
			fromInput = true
		} else {
			p := operands[0]
			operands = operands[1:]
			if sp.text {
				roles[p] = rCode
			} else {
				roles[p] = rProg
				if readsInput(ws[p]) {
					fromInput = true
				}
			}
		}
	}
	for _, j := range operands {
		if j != target && roles[j] == rOperand && readsInput(ws[j]) && !sp.noInput && !haveProg {
			fromInput = true
		}
	}
	if target == input && sp == shellSpec && mode && !fromInput {
		// sh -c 'source /dev/stdin': the script may itself run its input
		for j, r := range roles {
			if r != rCode {
				continue
			}
			if !ws[j].static {
				return refuse(name + " -c runs a script only known when the script runs, which may read its input as code; write the script out")
			}
			f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(ws[j].lit), "")
			if err != nil {
				return refuse(name + " -c runs a script that does not parse, so whether it reads its input as code cannot be told")
			}
			sub := &walker{prefix: w.prefix}
			sub.declared(f)
			if v := sub.inputOf(f, 1); v.refuse != "" {
				return refuse("the script " + name + " -c runs gives its input to a command that reads it as code: " + v.refuse)
			}
		}
	}
	if target == input {
		if fromInput && !sp.noInput {
			return refuse(name + " reads its program from its input here, so input made from a value would be " + sp.what + " code; " + sp.hint)
		}
		return verdict{}
	}
	who := name
	if by[target] != "" {
		who += " " + by[target]
	}
	switch roles[target] {
	case rCode:
		return refuse(who + " runs this argument as " + sp.what + " code, so a value there would be code; " + sp.hint)
	case rProg:
		return refuse(who + " runs the program (or loads the code) this word names, so a value here would choose the code that runs; name it in the script and " + sp.hint)
	case rOption, rOptArg, rUnknown:
		return refuse(name + " reads its options here, and a value here could be an option that runs code (such as -c or -e); " + sp.hint)
	}
	return verdict{}
}

func in(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A runner runs the command that follows its options (and operands).
type runner struct {
	arg      string   // letters taking an argument
	argLong  []string // long options taking an argument
	operands int      // operands before the command (timeout DURATION)
	assigns  bool     // NAME=value words before the command (env)
	code     string   // letters whose argument is shell code (flock -c, env -S)
	codeLong []string
	shell    string // letters after which the command is run through a shell (sudo -s)
	items    bool   // its input becomes arguments of the command (xargs)
}

var runners = sync.OnceValue(func() map[string]*runner {
	return map[string]*runner{
		"env":       {arg: "uC", argLong: []string{"--unset", "--chdir"}, assigns: true, code: "S", codeLong: []string{"--split-string"}},
		"xargs":     {arg: "adEILnPs", argLong: []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, items: true},
		"timeout":   {arg: "sk", argLong: []string{"--signal", "--kill-after"}, operands: 1},
		"nice":      {arg: "n", argLong: []string{"--adjustment"}},
		"nohup":     {},
		"sudo":      {arg: "ugCDhprtUTR", argLong: []string{"--user", "--group", "--close-from", "--chdir", "--host", "--prompt", "--role", "--type", "--other-user", "--command-timeout", "--chroot"}, shell: "si", codeLong: []string{"--shell", "--login"}},
		"doas":      {arg: "uC", shell: "s"},
		"command":   {},
		"builtin":   {},
		"exec":      {arg: "a"},
		"stdbuf":    {arg: "ioe", argLong: []string{"--input", "--output", "--error"}},
		"time":      {arg: "fo", argLong: []string{"--format", "--output"}},
		"setsid":    {},
		"chroot":    {argLong: []string{"--userspec", "--groups"}, operands: 1},
		"ionice":    {arg: "cnp", argLong: []string{"--class", "--classdata", "--pid"}},
		"taskset":   {operands: 1},
		"chrt":      {operands: 1},
		"flock":     {arg: "wE", argLong: []string{"--timeout", "--conflict-exit-code"}, operands: 1, code: "c", codeLong: []string{"--command"}},
		"unbuffer":  {},
		"busybox":   {},
		"fakeroot":  {},
		"eatmydata": {},
		"nocache":   {},
		"faketime":  {operands: 1},
		"script":    {code: "c", codeLong: []string{"--command"}, arg: "EIOT", argLong: []string{"--echo", "--log-in", "--log-out", "--log-timing"}},
		"sg":        {operands: 1, shell: "c"},
	}
})

func (w *walker) checkRunner(ws []cword, start, target int, r *runner, name string, depth int) verdict {
	// flock FILE -c CMD: some take their code option after an operand
	if r.code != "" || len(r.codeLong) > 0 {
		end := target
		if target == input {
			end = len(ws)
		}
		for j := start + 1; j < end; j++ {
			l := ws[j].lit
			if !ws[j].static || !strings.HasPrefix(l, "-") {
				continue
			}
			opt, _, _ := strings.Cut(l, "=")
			if in(r.codeLong, opt) || !strings.HasPrefix(l, "--") && strings.ContainsAny(l[1:], r.code) && r.code != "" {
				return refuse(name + " " + opt + " runs shell code, so a value there would be code; pass it through the step's env")
			}
		}
	}
	i := start + 1
	replace := false
	asOption := func() verdict {
		return refuse("a value here could be an option of " + name + " or the command it runs; put the value in an argument of that command")
	}
	for ; i < len(ws); i++ {
		wd := ws[i]
		if !wd.static {
			if wd.lead != "" && !strings.HasPrefix(wd.lead, "-") {
				break
			}
			if target == i {
				return asOption()
			}
			if target > i || target == input {
				return refuse("a word before the value is only known when the script runs, so what " + name + " runs cannot be told; write the command out")
			}
			return verdict{}
		}
		lit := wd.lit
		if lit == "--" {
			i++
			break
		}
		if len(lit) < 2 || lit[0] != '-' {
			break
		}
		if target == i {
			return asOption()
		}
		if strings.HasPrefix(lit, "--") {
			opt, _, eq := strings.Cut(lit, "=")
			if in(r.codeLong, opt) {
				if target > i || target == input {
					return refuse(name + " " + opt + " runs shell code, so a value there would be code; pass it through the step's env")
				}
				return verdict{}
			}
			if opt == "--replace" {
				replace = true
			}
			if in(r.argLong, opt) && !eq {
				i++
				if target == i {
					return asOption()
				}
			}
			continue
		}
		for k := 1; k < len(lit); k++ {
			c := lit[k]
			if r.items && (c == 'I' || c == 'i') {
				replace = true
			}
			if strings.IndexByte(r.code, c) >= 0 || strings.IndexByte(r.shell, c) >= 0 {
				if target > i || target == input {
					return refuse(name + " -" + string(c) + " runs shell code, so a value there would be code; pass it through the step's env")
				}
				return verdict{}
			}
			if strings.IndexByte(r.arg, c) >= 0 {
				if k+1 == len(lit) {
					i++
					if target == i {
						return asOption()
					}
				}
				break
			}
		}
	}
	for k := 0; k < r.operands && i < len(ws); k++ {
		i++
	}
	if r.assigns {
		for i < len(ws) && ws[i].lead != "" && isAssignWord(ws[i].lead) {
			if target == i {
				if v, ok := codeVar(strings.SplitN(ws[i].lead, "=", 2)[0]); ok {
					return v
				}
				return verdict{}
			}
			i++
		}
	}
	if i >= len(ws) {
		if name == "exec" && target == input {
			return refuse("exec with only redirections makes this the input of every later command, some of which may read it as code; redirect the input of the command that reads it")
		}
		return verdict{}
	}
	if target != input && target < i {
		return verdict{}
	}
	if r.items && target == input {
		if v := w.items(ws, i, replace, depth); v.refuse != "" {
			return refuse(name + " turns its input into arguments of the command it runs, where a value would be refused: " + v.refuse)
		}
		return verdict{}
	}
	return w.check(ws, i, target, depth+1)
}

// items judges input that xargs turns into arguments of the command at
// ws[start]: appended after its words, or (with -I) put into any of them.
func (w *walker) items(ws []cword, start int, replace bool, depth int) verdict {
	if replace {
		for j := start + 1; j < len(ws); j++ {
			if v := w.check(ws, start, j, depth+1); v.refuse != "" {
				return v
			}
		}
		return verdict{}
	}
	more := append(ws[:len(ws):len(ws)], cword{})
	return w.check(more, start, len(ws), depth+1)
}

func isAssignWord(s string) bool {
	name, _, ok := strings.Cut(s, "=")
	return ok && validName(name)
}

func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// codeVars are variables the shell or common programs run, or read as
// options that load code: a value assigned to one would be code.
var codeVars = map[string]bool{
	"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true, "BASH_ENV": true, "ENV": true,
	"SHELLOPTS": true, "BASHOPTS": true, "LD_PRELOAD": true, "LD_AUDIT": true, "LD_LIBRARY_PATH": true,
	"PERL5OPT": true, "PERL5DB": true, "RUBYOPT": true, "NODE_OPTIONS": true, "PYTHONSTARTUP": true, "PYTHONPATH": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_EDITOR": true, "GIT_PAGER": true, "GIT_EXTERNAL_DIFF": true,
	"GIT_ASKPASS": true, "SSH_ASKPASS": true, "GIT_PROXY_COMMAND": true, "GIT_CONFIG_PARAMETERS": true,
	"EDITOR": true, "VISUAL": true, "PAGER": true, "MANPAGER": true, "LESSOPEN": true, "LESSCLOSE": true,
}

func codeVar(name string) (verdict, bool) {
	if codeVars[name] || strings.HasPrefix(name, "BASH_FUNC_") || strings.HasPrefix(name, "GIT_CONFIG_") {
		return refuse("$" + name + " is run as code (or read as options that load code) by the shell or by programs, so a value cannot be assigned to it"), true
	}
	return verdict{}, false
}

// codeCommands run their arguments as code: why, for the message.
var codeCommands = map[string]string{
	"eval":       "runs its arguments as shell code, so a value there would be code",
	"alias":      "defines shell code from its arguments, so a value there would be code",
	"watch":      "runs its arguments as shell code, so a value there would be code",
	"parallel":   "runs its arguments (and input lines) as shell commands, so a value there would be code",
	"ssh":        "runs its command words through the remote shell, and reads options (-oProxyCommand=…) that run commands, so a value there would be code",
	"scp":        "reads options (-oProxyCommand=…) that run commands, and remote paths go through a remote shell",
	"sftp":       "reads options (-oProxyCommand=…) that run commands",
	"rsync":      "reads options (--rsh=…) that run commands, and remote paths go through a remote shell",
	"su":         "runs its -c argument as shell code and reads options anywhere",
	"runuser":    "runs its -c argument as shell code and reads options anywhere",
	"pkexec":     "runs the command it is given",
	"make":       "reads VAR=value arguments as makefile text, where $(shell …) runs",
	"gmake":      "reads VAR=value arguments as makefile text, where $(shell …) runs",
	"bmake":      "reads VAR=value arguments as makefile text, where != runs",
	"deno":       "runs programs given in its arguments (deno eval, deno run URL)",
	"bun":        "runs programs given in its arguments (bun -e, bun x)",
	"npx":        "runs the package its arguments name",
	"bunx":       "runs the package its arguments name",
	"pnpx":       "runs the package its arguments name",
	"yq":         "runs its first argument as a yq program",
	"pwsh":       "runs its arguments as PowerShell code",
	"powershell": "runs its arguments as PowerShell code",
	"sqlite3":    "runs SQL given in its arguments and input",
	"psql":       "runs SQL given in its arguments (-c) and input, and interpolates -v variables into SQL",
	"mysql":      "runs SQL given in its arguments (-e) and input",
	"mariadb":    "runs SQL given in its arguments (-e) and input",
	"duckdb":     "runs SQL given in its arguments and input",
	"complete":   "runs the commands its -C and -F options name",
	"compgen":    "runs the commands its -C and -F options name",
	"bind":       "runs the commands its -x option is given",
	"fc":         "runs an editor and commands from the history",
	"enable":     "loads builtins from the file its -f option names",
	"at":         "schedules its input as shell commands",
	"batch":      "schedules its input as shell commands",
	"crontab":    "installs its input or file as commands to run",
	"vim":        "runs its -c and + arguments as editor commands",
	"nvim":       "runs its -c and + arguments as editor commands",
	"vi":         "runs its -c and + arguments as editor commands",
	"emacs":      "runs its --eval arguments as Lisp",
	"gdb":        "runs its -ex arguments as debugger commands",
}

// codeInput are the code commands that also read code from their input.
var codeInput = map[string]bool{"parallel": true, "ssh": true, "sqlite3": true, "psql": true, "mysql": true, "mariadb": true,
	"duckdb": true, "at": true, "batch": true, "crontab": true, "su": true, "runuser": true, "pwsh": true, "powershell": true,
	"deno": true, "bun": true, "gdb": true}

// knownData take their arguments and input as data and run nothing they
// are given: no need to look in their words for an interpreter.
var knownData = map[string]bool{
	"echo": true, "printf": true, "cat": true, "tee": true, "grep": true, "egrep": true, "fgrep": true, "rg": true,
	"wc": true, "head": true, "tail": true, "cut": true, "tr": true, "test": true, "[": true, "true": true, "false": true,
	":": true, "printenv": true, "basename": true, "dirname": true, "mkdir": true, "rmdir": true, "rm": true, "cp": true,
	"mv": true, "ln": true, "touch": true, "ls": true, "stat": true, "diff": true, "cmp": true, "base64": true,
	"sha256sum": true, "sha1sum": true, "md5sum": true, "date": true, "sleep": true, "cd": true, "pwd": true,
	"exit": true, "return": true, "shift": true, "uniq": true, "nl": true, "fold": true, "rev": true, "realpath": true,
	"readlink": true, "mktemp": true, "chmod": true, "chown": true, "curl": true, "gofmt": true,
	"jo": true, "column": true, "paste": true, "comm": true, "join": true, "od": true, "xxd": true, "hexdump": true,
	"kill": true, "wait": true, "logger": true, "install": true,
}

var containers = map[string]bool{"docker": true, "podman": true, "nerdctl": true, "kubectl": true, "oc": true, "lxc": true, "incus": true}

// checkContainer: the command run in a container (docker run IMAGE CMD,
// kubectl exec POD -- CMD) may be a shell, and their options take values
// that run things; the other subcommands take data.
func checkContainer(ws []cword, start, target int, name string) verdict {
	for i := start + 1; i < len(ws); i++ {
		if !ws[i].static {
			if target >= i || target == input {
				return refuse("a value here could be a subcommand or option of " + name + "; write them out")
			}
			return verdict{}
		}
		s := ws[i].lit
		if strings.HasPrefix(s, "-") {
			continue
		}
		switch s {
		case "run", "exec", "create", "debug", "attach", "container", "compose", "start", "cp":
			if target > i || target == input {
				return refuse(name + " " + s + " runs a command in a container, which may be a shell running its arguments as code; pass the value through the step's env and " + name + "'s -e NAME")
			}
		}
		return verdict{}
	}
	return verdict{}
}

// git: its -c and global options, and some subcommands, run commands.
func checkGit(ws []cword, start, target int) verdict {
	if target == input {
		return verdict{}
	}
	i := start + 1
	for ; i < len(ws); i++ {
		if !ws[i].static {
			if target >= i {
				return refuse("git reads its options and subcommand here, and git -c … (core.pager, alias.*) runs commands; write git's options out and put the value in an argument of the subcommand")
			}
			return verdict{}
		}
		s := ws[i].lit
		if !strings.HasPrefix(s, "-") {
			break
		}
		switch s {
		case "-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--exec-path":
			i++
		}
		if target <= i {
			return refuse("git's global options (git -c core.pager=…, alias.*) run commands, so a value there would be code; put the value in an argument of the subcommand")
		}
	}
	if i >= len(ws) || target < i {
		return verdict{}
	}
	sub := ws[i].lit
	switch sub {
	case "config":
		return refuse("git config stores values that git runs as commands (alias.*, core.pager, core.sshCommand), so a value there could become code; set config in the plan's own files")
	case "rebase", "bisect", "filter-branch", "submodule", "difftool", "mergetool", "send-email", "daemon", "instaweb", "web--browse":
		return refuse("git " + sub + " runs commands it is given (--exec, run, foreach, --extcmd …), so a value there could be code")
	case "clone", "fetch", "pull", "push", "ls-remote", "archive", "remote", "fetch-pack", "send-pack":
		for j := i + 1; j < target; j++ {
			if ws[j].static && ws[j].lit == "--" {
				return verdict{}
			}
		}
		return refuse("git " + sub + " reads options that run commands (--upload-pack=…, --receive-pack=…), and a value here could be one; put -- before it")
	}
	return verdict{}
}

// find runs the command after -exec/-execdir/-ok/-okdir.
func (w *walker) checkFind(ws []cword, start, target, depth int) verdict {
	if target == input {
		return verdict{}
	}
	for i := start + 1; i < len(ws); i++ {
		if !ws[i].static {
			continue
		}
		switch ws[i].lit {
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(ws) && !(ws[end].static && (ws[end].lit == ";" || ws[end].lit == "+")) {
				end++
			}
			if target > i && target < end {
				return w.check(ws[:end], i+1, target, depth+1)
			}
			i = end
		}
	}
	return verdict{}
}

// nameBuiltins take variable names: in all their arguments (nil), or in
// the argument after one of the flags.
var nameBuiltins = map[string][]string{
	"unset": nil, "read": nil, "mapfile": nil, "readarray": nil, "getopts": nil,
	"printf": {"-v"}, "test": {"-v", "-R"}, "[": {"-v", "-R"}, "wait": {"-p"},
}

// declBuiltins are the declaration builtins, when the parser sees them as
// plain commands (builtin declare …, or a script read as POSIX sh).
var declBuiltins = map[string]bool{"declare": true, "typeset": true, "local": true, "export": true, "readonly": true, "nameref": true}

func checkDecl(ws []cword, start, target int, name string) verdict {
	arith := false
	for j := start + 1; j < target; j++ {
		if !ws[j].static {
			continue
		}
		if f := ws[j].lit; strings.HasPrefix(f, "-") || strings.HasPrefix(f, "+") {
			if strings.Contains(f, "n") || name == "nameref" {
				return refuse(name + " -n makes a variable refer to the name it is given, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there")
			}
			if strings.Contains(f, "i") {
				arith = true
			}
		}
	}
	lead := ws[target].lead
	if n, _, ok := strings.Cut(lead, "="); ok && validName(n) {
		if v, ok := codeVar(n); ok {
			return v
		}
		return verdict{arith: arith}
	}
	return refuse(name + " takes variable names here, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there")
}

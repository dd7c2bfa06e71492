package shellsafe

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

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

// checkInterp judges a value in word target of an interpreter's command
// (or reaching its input): refused where the interpreter reads it as
// code, as an option, or as the name of the code to run.
func (w *walker) checkInterp(ws []cword, start, target int, sp *langSpec, name string) verdict {
	a := readInterp(ws, start, sp)
	if a.unknownAt >= 0 && (target == input || target >= a.unknownAt || sp.permute) {
		return a.unknownVerdict(target, name)
	}
	a.findProgram(target)
	if target == input && sp == shellSpec && a.mode && !a.fromInput {
		if v := w.scriptReadsInput(a, name); v.refuse != "" {
			return v
		}
	}
	return a.verdict(target, name)
}

// interpWords is what an interpreter's option parsing makes of the words
// of its command.
type interpWords struct {
	sp        *langSpec
	ws        []cword
	roles     []int    // each word's role
	by        []string // the option that gave a word its role
	operands  []int
	modeBy    string // the option word that made the first operand code (sh -c)
	haveProg  bool   // an option gave the program (or code to load)
	mode      bool   // the first operand is the program text
	fromInput bool   // the program comes from the input
	endOpts   bool   // -- was read
	unknownAt int    // the first word only known at run time where options are read, or -1
}

// readInterp reads the interpreter's options and operands as getopt
// would.
func readInterp(ws []cword, start int, sp *langSpec) *interpWords {
	a := &interpWords{sp: sp, ws: ws, roles: make([]int, len(ws)), by: make([]string, len(ws)), unknownAt: -1}
	for i := start + 1; i < len(ws); i++ {
		if a.operandsOnly() {
			a.operands = append(a.operands, i)
			continue
		}
		var stop bool
		if i, stop = a.word(i); stop {
			break
		}
	}
	return a
}

// operandsOnly reports whether no more options are read.
func (a *interpWords) operandsOnly() bool {
	return a.endOpts || (!a.sp.permute && len(a.operands) > 0) || (a.sp.progEnds && a.haveProg)
}

// word reads the word at i, and the arguments of its options; it returns
// the last word read, and whether the words after it cannot be told.
func (a *interpWords) word(i int) (int, bool) {
	wd := a.ws[i]
	lit := wd.lit
	if !wd.static {
		if wd.lead != "" && !strings.HasPrefix(wd.lead, "-") && !(a.sp.plus && strings.HasPrefix(wd.lead, "+")) {
			a.operands = append(a.operands, i)
			return i, false
		}
		if !strings.HasPrefix(wd.lead, "--") || !strings.Contains(wd.lead, "=") {
			return i, a.unknown(i)
		}
		lit = wd.lead
	}
	switch {
	case lit == "--":
		a.roles[i] = rOption
		a.endOpts = true
		return i, false
	case lit == "-" || len(lit) < 2 || !(lit[0] == '-' || a.sp.plus && lit[0] == '+'):
		a.operands = append(a.operands, i)
		return i, false
	}
	a.roles[i] = rOption
	if strings.HasPrefix(lit, "--") {
		return a.long(i, lit), false
	}
	return a.cluster(i, lit, wd.static), false
}

// unknown marks a word only known at run time where options are read;
// unless options may follow operands, whether later words are options or
// operands depends on it, so they are unknown too.
func (a *interpWords) unknown(i int) bool {
	a.roles[i] = rUnknown
	if a.unknownAt < 0 {
		a.unknownAt = i
	}
	if a.sp.permute {
		return false
	}
	for j := i + 1; j < len(a.ws); j++ {
		a.roles[j] = rUnknown
	}
	return true
}

// next gives the word after i a role, as the argument of option opt.
func (a *interpWords) next(i int, opt string, role int) int {
	if i+1 < len(a.ws) {
		a.roles[i+1] = role
		a.by[i+1] = opt
	}
	return i + 1
}

// long reads a long option (--eval CODE, --arg NAME VALUE, --x=y).
func (a *interpWords) long(i int, lit string) int {
	sp := a.sp
	opt, _, eq := strings.Cut(lit, "=")
	switch {
	case in(sp.codeLong, opt), in(sp.progLong, opt):
		role := rCode
		if in(sp.progLong, opt) {
			role = rProg
		}
		a.haveProg = true
		if !eq {
			return a.next(i, lit, role)
		}
		a.roles[i] = role
		a.by[i] = opt
	case sp.dataLong[opt] > 0 && !eq:
		for k := 0; k < sp.dataLong[opt]; k++ {
			i = a.next(i, lit, rData)
		}
	case sp.dataLong[opt] > 0:
		a.roles[i] = rData
	case in(sp.argLong, opt) && !eq:
		return a.next(i, lit, rOptArg)
	}
	return i
}

// cluster reads a word of short options (-ec, -Bc CODE, -vname=x).
func (a *interpWords) cluster(i int, lit string, static bool) int {
	sp := a.sp
	for k := 1; k < len(lit); k++ {
		c := lit[k]
		switch {
		case strings.IndexByte(sp.mode, c) >= 0:
			a.mode = true
			a.modeBy = lit
		case strings.IndexByte(sp.stdinFlag, c) >= 0:
			a.fromInput = true
		case strings.IndexByte(sp.prog, c) >= 0:
			a.haveProg = true
			return a.optArg(i, k, lit, static, rProg)
		case strings.IndexByte(sp.code, c) >= 0:
			a.haveProg = true
			return a.optArg(i, k, lit, static, rCode)
		case strings.IndexByte(sp.data, c) >= 0:
			return a.optArg(i, k, lit, static, rData)
		case strings.IndexByte(sp.arg, c) >= 0:
			if k+1 == len(lit) && static {
				return a.next(i, lit, rOptArg)
			}
			return i
		}
	}
	return i
}

// optArg gives the role to the argument of the option letter at lit[k]:
// the rest of the word, or the next word.
func (a *interpWords) optArg(i, k int, lit string, static bool, role int) int {
	if k+1 < len(lit) || !static {
		a.roles[i] = role
		a.by[i] = lit
		return i
	}
	return a.next(i, lit, role)
}

// unknownVerdict refuses a value at or after a word only known at run
// time where options are read.
func (a *interpWords) unknownVerdict(target int, name string) verdict {
	if target != a.unknownAt {
		return refuse("a word of this " + name + " command before the value is only known when the script runs and could be an option that changes what is code (such as -c or -e); write the options out")
	}
	if a.mode || a.roles[target] == rCode {
		return refuse(name + " " + a.modeBy + " runs its first argument as " + a.sp.what + " code, and a value here would be that code (or an option); " + a.sp.hint)
	}
	return refuse(name + " reads its options here, and a value here could be an option that runs code (such as -c or -e); " + a.sp.hint)
}

// findProgram tells which operand is the program (sh -c CODE, awk PROG,
// python FILE), and whether the program comes from the input.
func (a *interpWords) findProgram(target int) {
	if a.mode && len(a.operands) > 0 {
		a.roles[a.operands[0]] = rCode
		a.by[a.operands[0]] = a.modeBy
		a.operands = a.operands[1:]
		a.haveProg = true
	}
	if !a.haveProg && !a.fromInput {
		a.firstOperandProgram()
	}
	for _, j := range a.operands {
		if j != target && a.roles[j] == rOperand && readsInput(a.ws[j]) && !a.sp.noInput && !a.haveProg {
			a.fromInput = true
		}
	}
}

// firstOperandProgram makes the first operand the program, its text or
// its file; without operands the program is the input.
func (a *interpWords) firstOperandProgram() {
	if len(a.operands) == 0 {
		a.fromInput = true
		return
	}
	p := a.operands[0]
	a.operands = a.operands[1:]
	if a.sp.text {
		a.roles[p] = rCode
		return
	}
	a.roles[p] = rProg
	if readsInput(a.ws[p]) {
		a.fromInput = true
	}
}

// scriptReadsInput judges the scripts of sh -c given input: the script
// may itself run its input (sh -c 'source /dev/stdin').
func (w *walker) scriptReadsInput(a *interpWords, name string) verdict {
	for j, r := range a.roles {
		if r != rCode {
			continue
		}
		if !a.ws[j].static {
			return refuse(name + " -c runs a script only known when the script runs, which may read its input as code; write the script out")
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(a.ws[j].lit), "")
		if err != nil {
			return refuse(name + " -c runs a script that does not parse, so whether it reads its input as code cannot be told")
		}
		sub := &walker{prefix: w.prefix}
		sub.declared(f)
		if v := sub.inputOf(f, 1); v.refuse != "" {
			return refuse("the script " + name + " -c runs gives its input to a command that reads it as code: " + v.refuse)
		}
	}
	return verdict{}
}

// verdict judges the value in word target (or the input) once the
// words' roles are known.
func (a *interpWords) verdict(target int, name string) verdict {
	sp := a.sp
	if target == input {
		if a.fromInput && !sp.noInput {
			return refuse(name + " reads its program from its input here, so input made from a value would be " + sp.what + " code; " + sp.hint)
		}
		return verdict{}
	}
	who := name
	if a.by[target] != "" {
		who += " " + a.by[target]
	}
	switch a.roles[target] {
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

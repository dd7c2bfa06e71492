package shellsafe

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Where a ${{ }} may stand in a script is an allow-list, read from the
// parsed script: the path from the stand-in word up to the root must be
// made only of places known to be data. A value may be
//   - an argument of a simple command that does not run its arguments as
//     code (an interpreter's code, an option of an interpreter, the program
//     it runs are not data), or text inside a quoted string of one;
//   - the value of an assignment (unless the variable is an integer or a
//     nameref, or one the shell or programs run as code, like PS4);
//   - a for list, a case subject or pattern, a ${x:-…} default, a [[ ]]
//     string comparison, a redirection's file;
//   - a heredoc or here-string body, or the input a pipe gives, when the
//     command reading it does not read its program from its input;
//   - inside $( ), `…` or <( ), when the command substitution itself
//     stands in such a place (its output lands there);
//   - a comment.
// In arithmetic (and in the places bash evaluates as arithmetic: array
// subscripts, [[ -eq ]], integer variables), the value must be a plain
// integer, checked when the step runs. Every other place is refused by
// validate, at the ${{ }}'s line and column, with what to do instead.
//
// What the parser cannot see stays the plan author's: a value put in a
// variable and then run (x=${{ … }}; eval "$x"), written to a file that is
// then run, passed to a function of the script that runs it, or given to a
// program of your own that runs its arguments as code.

// cword is a word of a simple command as far as the parser can read it.
type cword struct {
	lit    string // the word's text, quotes removed, when static
	static bool   // made of literal text only: no expansion, no ${{ }}
	lead   string // the literal text before the first expansion or ${{ }}
}

func (w *walker) words(args []*syntax.Word) []cword {
	out := make([]cword, len(args))
	for i, a := range args {
		out[i] = w.word(a)
	}
	return out
}

func (w *walker) word(wd *syntax.Word) cword {
	var b strings.Builder
	static := true
	var lead string
	stop := func() {
		if static {
			lead = b.String()
		}
		static = false
	}
	add := func(s string) bool {
		if i := strings.Index(s, w.prefix); i >= 0 {
			b.WriteString(s[:i])
			stop()
			return false
		}
		b.WriteString(s)
		return true
	}
	for _, p := range wd.Parts {
		if !static {
			break
		}
		switch p := p.(type) {
		case *syntax.Lit:
			add(unescape(p.Value, ""))
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				stop()
				continue
			}
			add(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					if !add(unescape(l.Value, "$`\"\\\n")) {
						break
					}
					continue
				}
				stop()
				break
			}
		default:
			stop()
		}
	}
	if static {
		return cword{lit: b.String(), static: true, lead: b.String()}
	}
	return cword{lead: lead}
}

// unescape drops the backslashes that quote the next character (any
// character when only is "", else those in only).
func unescape(s, only string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (only == "" || strings.IndexByte(only, s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// verdict is what a command makes of a value in one of its words (or in
// its input).
type verdict struct {
	refuse string // why it cannot take a value ("" when it can)
	arith  bool   // the value lands in arithmetic
}

func refuse(msg string) verdict { return verdict{refuse: msg} }

// the value's way into the command: a word (target >= 0) or its input
const input = -1

// check judges a value standing in word target of the simple command
// whose name is ws[start] (or, target == input, reaching its input).
func (w *walker) check(ws []cword, start, target, depth int) verdict {
	switch {
	case depth > 16:
		return refuse("the command runs commands too deeply nested to follow")
	case start >= len(ws):
		return verdict{}
	case target == start:
		return refuse("a ${{ }} cannot be the name of the command to run: put the command's name in the script and the value in one of its arguments")
	case !ws[start].static:
		return refuse("this command's name is only known when the script runs, so whether it runs its arguments (or its input) as code cannot be told; write the command's name out")
	}
	name := path.Base(ws[start].lit)
	if v, ok := w.checkKnown(ws, start, target, name, depth); ok {
		return v
	}
	if target == input {
		return w.checkInput(ws, start, name, depth)
	}
	return w.checkArg(ws, start, target, name, depth)
}

// checkKnown judges the commands known to run code or other commands,
// and the script's own functions given input; ok false for the others.
func (w *walker) checkKnown(ws []cword, start, target int, name string, depth int) (v verdict, ok bool) {
	if body, fn := w.funcs[name]; fn && target == input {
		return w.inputOf(body, depth+1), true
	}
	switch {
	case runners()[name] != nil:
		return w.checkRunner(ws, start, target, runners()[name], name, depth), true
	case interpreterSpec(name) != nil:
		return w.checkInterp(ws, start, target, interpreterSpec(name), name), true
	case codeCommands[name] != "":
		return checkCode(target, name), true
	case name == "trap":
		return checkTrap(ws, start, target), true
	case name == "source" || name == ".":
		return checkSource(ws, start, target, name), true
	case name == "git":
		return checkGit(ws, start, target), true
	case name == "find":
		return w.checkFind(ws, start, target, depth), true
	case containers[name]:
		return checkContainer(ws, start, target, name), true
	}
	return verdict{}, false
}

// checkInput judges input given to a command not known to run code.
func (w *walker) checkInput(ws []cword, start int, name string, depth int) verdict {
	switch {
	case name == "read" || name == "mapfile" || name == "readarray":
		return verdict{arith: w.intAll || len(w.ints) > 0}
	case knownData[name]:
		return verdict{}
	}
	return w.scan(ws, start, len(ws), input, depth)
}

// checkArg judges a value in an argument of a command not known to run
// code: builtins that take variable names, or read them after options
// a value could be, refuse it.
func (w *walker) checkArg(ws []cword, start, target int, name string, depth int) verdict {
	if declBuiltins[name] {
		v := checkDecl(ws, start, target, name)
		if n, _, ok := strings.Cut(ws[target].lead, "="); ok && w.isInt(n) {
			v.arith = true
		}
		return v
	}
	if v := checkNameArg(ws, target, name); v.refuse != "" {
		return v
	}
	if v := checkOptionPair(ws, start, target, name); v.refuse != "" {
		return v
	}
	switch {
	case name == "let":
		return verdict{arith: true}
	case knownData[name]:
		return verdict{}
	}
	return w.scan(ws, start, target, target, depth)
}

func checkCode(target int, name string) verdict {
	if target == input && !codeInput[name] {
		return verdict{}
	}
	return refuse(name + " " + codeCommands[name] + "; pass the value through the step's env (env: {NAME: ${{ … }}}) or a file, and use it there as data")
}

// checkTrap: trap runs its action as shell code; the signals after it
// are data.
func checkTrap(ws []cword, start, target int) verdict {
	if target == input {
		return verdict{}
	}
	i := start + 1
	for i < len(ws) && ws[i].static && strings.HasPrefix(ws[i].lit, "-") && ws[i].lit != "-" {
		if ws[i].lit == "--" {
			i++
			break
		}
		i++
	}
	if target <= i {
		return refuse("trap runs its action as shell code, so a value there would be code; pass it through the step's env and use \"$NAME\" in the action")
	}
	return verdict{}
}

// checkSource: source runs the file its first argument names (its input
// when that is /dev/stdin); the arguments after it are data.
func checkSource(ws []cword, start, target int, name string) verdict {
	switch {
	case target == input && start+1 < len(ws) && readsInput(ws[start+1]):
		return refuse(name + " runs the file it names, here its input, so input made from a value would be code")
	case target == start+1:
		return refuse(name + " runs the file this word names, so a value here would choose the code that runs; name the file in the script and pass the value as an argument after it")
	}
	return verdict{}
}

// checkNameArg refuses a value where a builtin takes a variable name.
func checkNameArg(ws []cword, target int, name string) verdict {
	flags, ok := nameBuiltins[name]
	switch {
	case !ok:
		return verdict{}
	case flags == nil:
		return refuse(name + " takes variable names, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there")
	}
	if prev := ws[target-1]; prev.static && in(flags, prev.lit) {
		return refuse(name + " " + prev.lit + " takes a variable name, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there")
	}
	return verdict{}
}

// checkOptionPair: a value could be -v (-R, -p), making the next word a
// variable name, whose array subscript bash runs: [ "$a" "$b" ] with
// a=-v, b='x[$(cmd)]' runs cmd.
func checkOptionPair(ws []cword, start, target int, name string) verdict {
	optsFirst := name == "printf" || name == "wait" // their options come first
	if !optsFirst && name != "test" && name != "[" {
		return verdict{}
	}
	next := target+1 < len(ws) && !ws[target+1].static
	prev := target-1 > start && !ws[target-1].static
	if optsFirst && target > start+2 {
		next, prev = false, false // past the options
	}
	if optsFirst && target == start+2 {
		next = false
	}
	if next || prev {
		return refuse(name + " reads options such as -v (whose variable name bash expands, running $( ) in an array subscript), and a value here next to a word only known at run time could be one; put a static word (an operator such as =, or --) between them")
	}
	return verdict{}
}

// scan looks, in a command runner does not know, for a word naming an
// interpreter before the value (strace bash -c …, a launcher of its own):
// from there on the words may be that interpreter's.
func (w *walker) scan(ws []cword, start, end, target, depth int) verdict {
	for j := start + 1; j < end; j++ {
		if !ws[j].static {
			continue
		}
		n := path.Base(ws[j].lit)
		if runners()[n] != nil || interpreterSpec(n) != nil || codeCommands[n] != "" {
			if v := w.check(ws, j, target, depth+1); v.refuse != "" {
				v.refuse += " (if " + n + " is not a command run here, put the value in a variable first and pass \"$NAME\")"
				return v
			}
		}
	}
	return verdict{}
}

// inputOf judges input given to a command of the script (a pipe's right
// side, a redirected block, a function called with a heredoc): refused if
// any simple command inside reads its program from it.
func (w *walker) inputOf(n syntax.Node, depth int) verdict {
	var v verdict
	if depth > 16 {
		return refuse("the commands reading this input are nested too deeply to follow")
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		if v.refuse != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				return true
			}
			ws := w.words(n.Args)
			r := w.check(ws, 0, input, depth)
			if r.refuse != "" {
				v = r
				return false
			}
			v.arith = v.arith || r.arith
		case *syntax.FuncDecl:
			return false // run only when called
		}
		return true
	})
	return v
}

// place judges the node st[i], reached from its child: "" when a value
// there stays data (setting fd.arith in arithmetic), else why not.
func (w *walker) place(st []syntax.Node, i int, child syntax.Node, fd *finding) string {
	n := st[i]
	if passes(n, child) {
		return ""
	}
	if msg, ok := w.placeInCommand(st, i, child, fd); ok {
		return msg
	}
	if msg, ok := w.placeInVariable(st, i, child, fd); ok {
		return msg
	}
	if msg, ok := placeInTest(n, fd); ok {
		return msg
	}
	return "a ${{ }} cannot stand here (" + nodeName(n) + "): it is not a place known to hold data"
}

// passes reports whether a value in child of n is data as far as n goes:
// words, quotes, command substitutions (their output lands where they
// stand), compound commands, a function's body, a coprocess's command.
func passes(n, child syntax.Node) bool {
	switch a := n.(type) {
	case *syntax.File, *syntax.Word, *syntax.DblQuoted, *syntax.SglQuoted, *syntax.Lit,
		*syntax.CmdSubst, *syntax.ProcSubst, *syntax.Block, *syntax.Subshell, *syntax.IfClause,
		*syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause, *syntax.CaseItem,
		*syntax.TimeClause, *syntax.TestClause, *syntax.ParenTest, *syntax.ArrayExpr:
		return true
	case *syntax.FuncDecl:
		return child == syntax.Node(a.Body)
	case *syntax.CoprocClause:
		return child == syntax.Node(a.Stmt)
	}
	return false
}

// placeInCommand judges statements, redirections, pipes and simple
// commands; ok false for other nodes.
func (w *walker) placeInCommand(st []syntax.Node, i int, child syntax.Node, fd *finding) (msg string, ok bool) {
	switch a := st[i].(type) {
	case *syntax.Stmt:
		return w.placeInStmt(a, child), true
	case *syntax.Redirect:
		return w.placeInRedirect(a, st[i-1], child, fd), true
	case *syntax.BinaryCmd:
		if (a.Op == syntax.Pipe || a.Op == syntax.PipeAll) && child == syntax.Node(a.X) {
			v := w.inputOf(a.Y, 0)
			if v.refuse != "" {
				return "this command's output is piped to one that reads it as code: " + v.refuse, true
			}
			fd.arith = fd.arith || v.arith
		}
		return "", true
	case *syntax.CallExpr:
		return w.placeInCall(a, child, fd), true
	}
	return "", false
}

// placeInStmt: a command's output sent to >(…) is read by the commands
// there.
func (w *walker) placeInStmt(a *syntax.Stmt, child syntax.Node) string {
	if child != syntax.Node(a.Cmd) {
		return ""
	}
	for _, r := range a.Redirs {
		if isInputRedir(r.Op) {
			continue
		}
		if v := w.procInputs(r.Word); v.refuse != "" {
			return "the output of this command goes to a process substitution that reads it as code: " + v.refuse
		}
	}
	return ""
}

// placeInRedirect: a file name written to is data; input (a file read, a
// heredoc, a here-string) is judged by the command reading it.
func (w *walker) placeInRedirect(a *syntax.Redirect, parent, child syntax.Node, fd *finding) string {
	if child == syntax.Node(a.N) {
		return "a ${{ }} cannot be a redirection's file descriptor"
	}
	if !isInputRedir(a.Op) {
		return "" // a file name written to
	}
	stmt, _ := parent.(*syntax.Stmt)
	if stmt == nil || stmt.Cmd == nil {
		return ""
	}
	v := w.inputOf(stmt.Cmd, 0)
	if v.refuse != "" {
		return "this input goes to a command that reads it as code: " + v.refuse
	}
	fd.arith = fd.arith || v.arith
	return ""
}

// placeInCall: an assignment before a command is judged as an Assign; an
// argument by the command.
func (w *walker) placeInCall(a *syntax.CallExpr, child syntax.Node, fd *finding) string {
	for _, as := range a.Assigns {
		if syntax.Node(as) == child {
			return "" // judged as an Assign
		}
	}
	idx := -1
	for k, arg := range a.Args {
		if syntax.Node(arg) == child {
			idx = k
		}
	}
	if idx < 0 {
		return "cannot tell where this ${{ }} stands in the command"
	}
	v := w.check(w.words(a.Args), 0, idx, 0)
	fd.arith = fd.arith || v.arith
	return v.refuse
}

// placeInVariable judges assignments, declarations, array elements,
// parameter expansions and for loops; ok false for other nodes, or for a
// part of them not known to hold data.
func (w *walker) placeInVariable(st []syntax.Node, i int, child syntax.Node, fd *finding) (msg string, ok bool) {
	switch a := st[i].(type) {
	case *syntax.Assign:
		return w.placeInAssign(a, child, fd)
	case *syntax.DeclClause:
		return placeInDecl(a, child, fd), true
	case *syntax.ArrayElem:
		if child == syntax.Node(a.Index) && !assocDecl(st[:i]) {
			fd.arith = true
		}
		return "", true
	case *syntax.ParamExp:
		return w.placeInParam(a, child, fd)
	case *syntax.WordIter:
		if w.isInt(a.Name.Value) {
			fd.arith = true
		}
		return "", true
	}
	return "", false
}

// placeInAssign: the value is data unless the variable is run as code,
// or is an integer (then it is arithmetic); an index is arithmetic.
func (w *walker) placeInAssign(a *syntax.Assign, child syntax.Node, fd *finding) (string, bool) {
	switch child {
	case syntax.Node(a.Value), syntax.Node(a.Array):
		if a.Naked {
			return "this word is a variable name, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there", true
		}
		if v, ok := codeVar(a.Name.Value); ok {
			return v.refuse, true
		}
		if w.isInt(a.Name.Value) {
			fd.arith = true
		}
		return "", true
	case syntax.Node(a.Index):
		fd.arith = true
		return "", true
	}
	return "", false
}

// placeInDecl: declare's options decide what its words are; a value may
// only be an assignment's value (judged as an Assign).
func placeInDecl(a *syntax.DeclClause, child syntax.Node, fd *finding) string {
	variant := a.Variant.Value
	if msg := declFlags(a, fd); msg != "" {
		return msg
	}
	if variant == "nameref" {
		return "nameref makes a variable refer to the name it is given; a ${{ }} cannot stand there"
	}
	for _, as := range a.Args {
		if syntax.Node(as) != child || !as.Naked {
			continue
		}
		if as.Value != nil && strings.HasPrefix(as.Value.Lit(), "-") {
			return variant + " reads its options here, and a value could be one (-n, -i); put the value in an assignment: " + variant + " NAME=${{ … }}"
		}
		return variant + " takes variable names here, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there"
	}
	return ""
}

// declFlags reads declare's static options: -n refuses any value, -i
// makes the values arithmetic.
func declFlags(a *syntax.DeclClause, fd *finding) string {
	for _, as := range a.Args {
		if !as.Naked || as.Value == nil {
			continue
		}
		f := as.Value.Lit()
		if !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "+") {
			continue
		}
		if strings.Contains(f, "n") && a.Variant.Value != "export" { // export -n unexports
			return a.Variant.Value + " -n makes a variable refer to the name it is given, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there"
		}
		if strings.Contains(f, "i") {
			fd.arith = true
		}
	}
	return ""
}

// placeInParam judges ${x…} operators: defaults and pattern removals take
// data, := assigns, indexes and slices are arithmetic.
func (w *walker) placeInParam(a *syntax.ParamExp, child syntax.Node, fd *finding) (string, bool) {
	switch {
	case a.Exp != nil && child == syntax.Node(a.Exp.Word):
		return w.placeInParamOp(a, fd), true
	case a.Index != nil && child == syntax.Node(a.Index),
		a.Slice != nil && (child == syntax.Node(a.Slice.Offset) || child == syntax.Node(a.Slice.Length)):
		fd.arith = true
		return "", true
	case a.Repl != nil:
		return `a ${{ }} cannot stand in a ${x/…/…} replacement; put the value in a variable first: v=${{ … }}; … ${x/"$v"/…}`, true
	}
	return "", false
}

func (w *walker) placeInParamOp(a *syntax.ParamExp, fd *finding) string {
	switch a.Exp.Op {
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		if a.Param == nil {
			return ""
		}
		if v, ok := codeVar(a.Param.Value); ok {
			return v.refuse
		}
		if w.isInt(a.Param.Value) {
			fd.arith = true
		}
		return ""
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull, syntax.DefaultUnset, syntax.DefaultUnsetOrNull,
		syntax.ErrorUnset, syntax.ErrorUnsetOrNull, syntax.RemSmallSuffix, syntax.RemLargeSuffix,
		syntax.RemSmallPrefix, syntax.RemLargePrefix, syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
		return ""
	}
	return "a ${{ }} cannot stand in this ${x…} operator"
}

// placeInTest judges arithmetic and [[ ]] tests; ok false for other
// nodes.
func placeInTest(n syntax.Node, fd *finding) (msg string, ok bool) {
	switch a := n.(type) {
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.BinaryArithm, *syntax.UnaryArithm,
		*syntax.ParenArithm, *syntax.CStyleLoop, *syntax.FlagsArithm:
		fd.arith = true
		return "", true
	case *syntax.BinaryTest:
		switch a.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			fd.arith = true
		}
		return "", true
	case *syntax.UnaryTest:
		if a.Op == syntax.TsVarSet || a.Op == syntax.TsRefVar {
			return "`-v` takes a variable name, and bash runs the commands in a name's array subscript; a ${{ }} cannot stand there", true
		}
		return "", true
	}
	return "", false
}

func isInputRedir(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true
	}
	return false
}

// procInputs judges the commands in the >(…) of a word, which read what
// is written there.
func (w *walker) procInputs(wd *syntax.Word) verdict {
	var v verdict
	if wd == nil {
		return v
	}
	for _, p := range wd.Parts {
		if ps, ok := p.(*syntax.ProcSubst); ok && ps.Op == syntax.CmdOut && v.refuse == "" {
			for _, s := range ps.Stmts {
				if r := w.inputOf(s, 0); r.refuse != "" {
					v = r
				}
			}
		}
	}
	return v
}

func (w *walker) isInt(name string) bool { return w.intAll || w.ints[name] }

// declared collects what the whole script declares, before any ${{ }} is
// judged: its functions, and the variables bash assigns by evaluating
// arithmetic (declare -i), or through a nameref (declare -n), which may
// point at one.
func (w *walker) declared(f *syntax.File) {
	w.funcs = map[string]syntax.Node{}
	w.ints = map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			if n.Name != nil {
				w.funcs[n.Name.Value] = n.Body
			}
		case *syntax.DeclClause:
			if intDecl(n) {
				w.declaredInts(n)
			}
		case *syntax.CallExpr:
			w.declaredByCall(n)
		}
		return true
	})
}

// intDecl reports whether a declaration makes its variables integers or
// namerefs.
func intDecl(n *syntax.DeclClause) bool {
	if n.Variant.Value == "nameref" {
		return true
	}
	for _, as := range n.Args {
		if !as.Naked || as.Value == nil {
			continue
		}
		f := as.Value.Lit()
		if isFlag(f) && (strings.Contains(f, "i") || strings.Contains(f, "n") && n.Variant.Value != "export") {
			return true
		}
	}
	return false
}

// declaredInts notes the variables an integer or nameref declaration
// names; any variable, when a name cannot be told.
func (w *walker) declaredInts(n *syntax.DeclClause) {
	for _, as := range n.Args {
		switch {
		case as.Name != nil:
			w.ints[as.Name.Value] = true
		case as.Naked && as.Value != nil:
			f := as.Value.Lit()
			switch {
			case isFlag(f):
			case validName(f):
				w.ints[f] = true
			default:
				w.intAll = true
			}
		}
	}
}

// declaredByCall: builtin declare -i n, command typeset -i n are not
// parsed as declarations, so any variable may be one.
func (w *walker) declaredByCall(n *syntax.CallExpr) {
	seen := false
	for _, a := range n.Args {
		l := a.Lit()
		if declBuiltins[path.Base(l)] {
			seen = true
		} else if seen && isFlag(l) && strings.ContainsAny(l, "in") {
			w.intAll = true
		}
	}
}

func isFlag(s string) bool { return strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") }

// assocDecl reports whether the array being assigned is declared
// associative (declare -A m=([key]=…)) in the same clause: its keys are
// strings, not arithmetic.
func assocDecl(st []syntax.Node) bool {
	for i := len(st) - 1; i >= 0; i-- {
		if d, ok := st[i].(*syntax.DeclClause); ok {
			for _, as := range d.Args {
				if as.Naked && as.Value != nil {
					f := as.Value.Lit()
					if strings.HasPrefix(f, "-") && strings.Contains(f, "A") {
						return true
					}
				}
			}
			return false
		}
	}
	return false
}

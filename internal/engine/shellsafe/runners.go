package shellsafe

import (
	"strings"
	"sync"
)

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

// checkRunner judges a value in word target of a runner's command (or
// reaching its input): in the runner's options it could be one; in the
// command the runner runs, that command judges it.
func (w *walker) checkRunner(ws []cword, start, target int, r *runner, name string, depth int) verdict {
	if v := r.codeOption(ws, start, target, name); v.refuse != "" {
		return v
	}
	o := &runnerOpts{ws: ws, target: target, r: r, name: name}
	i, v, done := o.skip(start + 1)
	if done {
		return v
	}
	if i < len(ws) {
		i = min(i+r.operands, len(ws))
	}
	if r.assigns {
		if i, v, done = o.assigns(i); done {
			return v
		}
	}
	switch {
	case i >= len(ws) && name == "exec" && target == input:
		return refuse("exec with only redirections makes this the input of every later command, some of which may read it as code; redirect the input of the command that reads it")
	case i >= len(ws), target != input && target < i:
		return verdict{}
	case r.items && target == input:
		if v := w.items(ws, i, o.replace, depth); v.refuse != "" {
			return refuse(name + " turns its input into arguments of the command it runs, where a value would be refused: " + v.refuse)
		}
		return verdict{}
	}
	return w.check(ws, i, target, depth+1)
}

// codeOption refuses a value after an option that runs shell code;
// some runners take it after an operand (flock FILE -c CMD).
func (r *runner) codeOption(ws []cword, start, target int, name string) verdict {
	if r.code == "" && len(r.codeLong) == 0 {
		return verdict{}
	}
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
	return verdict{}
}

// runnerOpts reads a runner's options up to the command it runs.
type runnerOpts struct {
	ws      []cword
	target  int
	r       *runner
	name    string
	replace bool // xargs -I: input items go into the command's words
}

// skip reads the options from word i. It returns the index of the first
// word after them, or done with the verdict when the value is among them
// (or after an option that runs shell code).
func (o *runnerOpts) skip(i int) (next int, v verdict, done bool) {
	for ; i < len(o.ws); i++ {
		wd := o.ws[i]
		if !wd.static {
			if wd.lead != "" && !strings.HasPrefix(wd.lead, "-") {
				return i, verdict{}, false
			}
			return i, o.unknown(i), true
		}
		lit := wd.lit
		if lit == "--" {
			return i + 1, verdict{}, false
		}
		if len(lit) < 2 || lit[0] != '-' {
			return i, verdict{}, false
		}
		if o.target == i {
			return i, o.asOption(), true
		}
		if strings.HasPrefix(lit, "--") {
			i, v, done = o.long(i, lit)
		} else {
			i, v, done = o.short(i, lit)
		}
		if done {
			return i, v, true
		}
	}
	return i, verdict{}, false
}

func (o *runnerOpts) asOption() verdict {
	return refuse("a value here could be an option of " + o.name + " or the command it runs; put the value in an argument of that command")
}

// unknown judges the value against a word at i only known at run time,
// which could be an option.
func (o *runnerOpts) unknown(i int) verdict {
	switch {
	case o.target == i:
		return o.asOption()
	case o.target > i || o.target == input:
		return refuse("a word before the value is only known when the script runs, so what " + o.name + " runs cannot be told; write the command out")
	}
	return verdict{}
}

// code judges the value against an option at i that runs shell code.
func (o *runnerOpts) code(i int, opt string) verdict {
	if o.target > i || o.target == input {
		return refuse(o.name + " " + opt + " runs shell code, so a value there would be code; pass it through the step's env")
	}
	return verdict{}
}

// optArg skips the argument of the option at i.
func (o *runnerOpts) optArg(i int) (int, verdict, bool) {
	i++
	if o.target == i {
		return i, o.asOption(), true
	}
	return i, verdict{}, false
}

func (o *runnerOpts) long(i int, lit string) (int, verdict, bool) {
	opt, _, eq := strings.Cut(lit, "=")
	if in(o.r.codeLong, opt) {
		return i, o.code(i, opt), true
	}
	if opt == "--replace" {
		o.replace = true
	}
	if in(o.r.argLong, opt) && !eq {
		return o.optArg(i)
	}
	return i, verdict{}, false
}

func (o *runnerOpts) short(i int, lit string) (int, verdict, bool) {
	r := o.r
	for k := 1; k < len(lit); k++ {
		c := lit[k]
		if r.items && (c == 'I' || c == 'i') {
			o.replace = true
		}
		if strings.IndexByte(r.code, c) >= 0 || strings.IndexByte(r.shell, c) >= 0 {
			return i, o.code(i, "-"+string(c)), true
		}
		if strings.IndexByte(r.arg, c) >= 0 {
			if k+1 == len(lit) {
				return o.optArg(i)
			}
			break
		}
	}
	return i, verdict{}, false
}

// assigns skips the NAME=value words before the command (env A=1 cmd);
// a value in one is refused only for a variable that is run as code.
func (o *runnerOpts) assigns(i int) (int, verdict, bool) {
	ws := o.ws
	for i < len(ws) && ws[i].lead != "" && isAssignWord(ws[i].lead) {
		if o.target == i {
			if v, ok := codeVar(strings.SplitN(ws[i].lead, "=", 2)[0]); ok {
				return i, v, true
			}
			return i, verdict{}, true
		}
		i++
	}
	return i, verdict{}, false
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

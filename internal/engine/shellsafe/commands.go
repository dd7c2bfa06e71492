package shellsafe

import (
	"strings"
)

// What runner knows of commands: which run their arguments or input as
// code (here), how interpreters read their options (interp.go), which run
// other commands (runners.go). A command not named takes its arguments as
// data (see places.go for what that leaves to the plan's author).

// readsInput reports whether a word names the process's input (or another
// inherited descriptor) as a file.
func readsInput(c cword) bool {
	if !c.static {
		return false
	}
	return c.lit == "-" || c.lit == "/dev/stdin" || strings.HasPrefix(c.lit, "/dev/fd/") || strings.HasPrefix(c.lit, "/proc/self/fd/")
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
	i, v, done := gitOptions(ws, start+1, target)
	if done {
		return v
	}
	if i >= len(ws) || target < i {
		return verdict{}
	}
	return gitSubcommand(ws, i, target)
}

// gitOptions skips git's global options from word i; done with the
// verdict when the value is among them.
func gitOptions(ws []cword, i, target int) (int, verdict, bool) {
	for ; i < len(ws); i++ {
		if !ws[i].static {
			if target >= i {
				return i, refuse("git reads its options and subcommand here, and git -c … (core.pager, alias.*) runs commands; write git's options out and put the value in an argument of the subcommand"), true
			}
			return i, verdict{}, true
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
			return i, refuse("git's global options (git -c core.pager=…, alias.*) run commands, so a value there would be code; put the value in an argument of the subcommand"), true
		}
	}
	return i, verdict{}, false
}

// gitSubcommand judges a value in the words of the subcommand at i.
func gitSubcommand(ws []cword, i, target int) verdict {
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

package shellsafe

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// Every place where a value would run as code is refused, at the value,
// saying what to do instead; wherever the code option stands among the
// others. @@ is the ${{ }}.
func TestShellCodePlacesRefused(t *testing.T) {
	tests := []struct{ name, run, want string }{
		// the word after -c is not the only place -c's code can be
		{"bash -c --", `bash -c -- "echo @@"`, "bash -c runs this argument as shell code"},
		{"bash -c -e", `bash -c -e "echo @@"`, "bash -c runs this argument as shell code"},
		{"bash -e -c", `bash -e -c "echo @@"`, "bash -c runs this argument as shell code"},
		{"bash -ec", `bash -ec "echo @@"`, "bash -ec runs this argument as shell code"},
		{"sh -xc", `sh -xc "echo @@"`, "sh -xc runs this argument as shell code"},
		{"bash -o pipefail -c", `bash -o pipefail -c "echo @@"`, "bash -c runs this argument as shell code"},
		{"dash -c, bare value", `dash -c @@`, "dash -c runs its first argument as shell code"},
		{"bash -c \"$(…)\"", `bash -c "$(printf %s @@)"`, "bash -c runs its first argument as shell code"},
		{"bash -c, value in the middle", "bash -c \"set -e\necho @@\"", "bash -c runs this argument as shell code"},
		{"zsh -c", `zsh -fc "echo @@"`, "zsh -fc runs this argument as shell code"},
		{"bash script named by a value", `bash @@`, "bash reads its options here"},
		{"bash <(…)", `bash <(echo @@)`, "bash -c"[:4] + " reads its options here"},
		// through programs that run other programs
		{"env bash -c", `env -i PATH=/bin bash -c "echo @@"`, "bash -c runs this argument as shell code"},
		{"timeout sh -c", `timeout -s KILL 5 sh -c "echo @@"`, "sh -c runs this argument as shell code"},
		{"sudo -u bash -c", `sudo -u root bash -c "echo @@"`, "bash -c runs this argument as shell code"},
		{"nice python3 -c", `nice -n 5 python3 -c "print('@@')"`, "python3 -c runs this argument as Python code"},
		{"nohup exec command", `nohup sh -c "echo @@"`, "sh -c runs this argument"},
		{"exec sh -c", `exec sh -c "echo @@"`, "sh -c runs this argument"},
		{"command eval", `command eval "echo @@"`, "eval runs its arguments as shell code"},
		{"builtin eval", `builtin eval "echo @@"`, "eval runs its arguments as shell code"},
		{"stdbuf xargs sh -c", `stdbuf -oL xargs -0 sh -c "echo @@"`, "sh -c runs this argument"},
		{"find -exec sh -c", `find . -exec sh -c "echo @@" \;`, "sh -c runs this argument"},
		{"an unknown runner, then bash -c", `strace -f bash -c "echo @@"`, "bash -c runs this argument"},
		{"env -S", `env -S "echo @@"`, "env -S runs shell code"},
		{"flock -c", `flock /tmp/l -c "echo @@"`, "flock"},
		{"sudo -s", `sudo -s echo @@`, "sudo -s runs shell code"},
		// interpreters, any option order
		{"python3 -c", `python3 -c "print('@@')"`, "python3 -c runs this argument as Python code"},
		{"python3 -Bc", `python3 -Bc "print('@@')"`, "python3 -Bc runs this argument as Python code"},
		{"python3 -I -c", `python3 -I -c "print('@@')"`, "python3 -c runs this argument"},
		{"python3.12 -c", `/usr/bin/python3.12 -c "print('@@')"`, "python3.12 -c runs this argument"},
		{"python3 -m value", `python3 -m @@`, "python3 -m runs the program"},
		{"python3 script named by a value", `python3 @@`, "python3 reads its options here"},
		{"node -e", `node -e "console.log('@@')"`, "node -e runs this argument as JavaScript code"},
		{"node --eval", `node --eval "@@"`, "node --eval runs this argument"},
		{"node --eval=", `node --eval="@@"`, "node --eval runs this argument"},
		{"node -p", `node -p "'@@'"`, "node -p runs this argument"},
		{"perl -e", `perl -e 'print "@@"'`, "perl -e runs this argument as Perl code"},
		{"perl -E", `perl -E 'say "@@"'`, "perl -E runs this argument"},
		{"perl -lne", `perl -lne 'print "@@"' file`, "perl -lne runs this argument"},
		{"perl -w -e", `perl -w -e 'print "@@"'`, "perl -e runs this argument"},
		{"ruby -e", `ruby -e 'puts "@@"'`, "ruby -e runs this argument as Ruby code"},
		{"php -r", `php -r 'echo "@@";'`, "php -r runs this argument"},
		{"awk program", `awk '{print "@@"}'`, "awk runs this argument as awk code"},
		{"gawk -e", `gawk -e '{print "@@"}'`, "gawk -e runs this argument"},
		{"sed script", `sed "s/a/@@/" f`, "sed runs this argument as sed code"},
		{"sed -e after a file", `sed -n f -e "s/a/@@/"`, "sed -e runs this argument"},
		{"sed file without --", `sed 's/a/b/' @@`, "sed reads its options here"},
		{"jq program", `jq ".a = @@"`, "jq runs this argument as jq code"},
		// input that an interpreter reads as its program
		{"bash <<EOF", "bash <<EOF\necho @@\nEOF", "bash reads its program from its input"},
		{"bash -s <<EOF", "bash -s -- a <<EOF\necho @@\nEOF", "bash reads its program from its input"},
		{"python3 <<EOF", "python3 <<EOF\nprint('@@')\nEOF", "python3 reads its program from its input"},
		{"python3 - <<EOF", "python3 - <<EOF\nprint('@@')\nEOF", "python3 reads its program from its input"},
		{"sh <<-EOF", "sh <<-EOF\n\techo @@\n\tEOF", "sh reads its program from its input"},
		{"node <<EOF", "node <<EOF\nconsole.log('@@')\nEOF", "node reads its program from its input"},
		{"here-string to bash", `bash <<< "echo @@"`, "bash reads its program from its input"},
		{"pipe into sh", `echo "@@" | sh`, "piped to one that reads it as code: sh reads its program"},
		{"pipe through grep into bash", `echo "@@" | grep . | bash`, "piped to one that reads it as code"},
		{"pipe into perl", `printf '%s' "@@" | perl`, "perl reads its program"},
		{"file given to bash", `bash < @@`, "bash reads its program"},
		{"heredoc into a block", "{ bash; } <<EOF\necho @@\nEOF", "bash reads its program"},
		{"heredoc into a function", "f() { sh; }\nf <<EOF\necho @@\nEOF", "sh reads its program"},
		{"heredoc to ssh", "ssh host <<EOF\necho @@\nEOF", "ssh runs its command words"},
		{"output into >(bash)", `echo "@@" > >(bash)`, "process substitution that reads it as code"},
		{"tee >(sh)", `echo "@@" | tee >(sh)`, "piped to one that reads it as code"},
		{"xargs -I into sh -c", `echo "@@" | xargs -I{} sh -c 'echo {}'`, "xargs turns its input into arguments"},
		{"sh -c script running its input", "sh -c '. /dev/stdin' <<EOF\necho @@\nEOF", "the script sh -c runs gives its input to a command that reads it as code"},
		{"bash -c script piping its input to python", "bash -ec 'cat | python3' <<EOF\n@@\nEOF", "python3 reads its program from its input"},
		{"exec <<EOF", "exec <<EOF\n@@\nEOF\nbash", "exec with only redirections"},
		// the command's name
		{"value as the command", `@@ --help`, "cannot be the name of the command to run"},
		{"variable as the command", `$CMD @@`, "this command's name is only known when the script runs"},
		{"find -exec value", `find . -exec @@ \;`, "cannot be the name of the command to run"},
		{"env value", `env A=1 @@`, "cannot be the name of the command"},
		{"xargs value", `xargs @@`, "could be an option of xargs or the command it runs"},
		// code commands and code variables
		{"eval", `eval "echo @@"`, "eval runs its arguments as shell code"},
		{"source", `source @@`, "source runs the file this word names"},
		{"dot", `. @@`, ". runs the file this word names"},
		{"trap", `trap "echo @@" EXIT`, "trap runs its action as shell code"},
		{"watch", `watch "echo @@"`, "watch runs its arguments as shell code"},
		{"make", `make @@`, "make reads VAR=value arguments as makefile text"},
		{"ssh", `ssh host "echo @@"`, "ssh runs its command words"},
		{"docker run", `docker run --rm img sh -c "echo @@"`, "docker run runs a command in a container"},
		{"kubectl exec", `kubectl exec p -- sh -c "echo @@"`, "kubectl exec runs a command in a container"},
		{"git -c", `git -c "alias.x=!@@" x`, "git's global options"},
		{"git config", `git config core.pager @@`, "git config stores values that git runs"},
		{"git clone option", `git clone @@ dir`, "git clone reads options that run commands"},
		{"git rebase --exec", `git rebase --exec "@@" main`, "git rebase runs commands"},
		{"PS4", `PS4=@@ bash -x s.sh`, "$PS4 is run as code"},
		{"export BASH_ENV", `export BASH_ENV=@@`, "$BASH_ENV is run as code"},
		{"env GIT_SSH_COMMAND", `env GIT_SSH_COMMAND=@@ git fetch`, "$GIT_SSH_COMMAND is run as code"},
		{"PROMPT_COMMAND default", `: "${PROMPT_COMMAND:=@@}"`, "$PROMPT_COMMAND is run as code"},
		// names
		{"declare name", `declare @@`, "cannot be a name here"},
		{"test -R", `test -R @@`, "test -R takes a variable name"},
		{"[ -v ]", `[ -v @@ ]`, "[ -v takes a variable name"},
		{"[ value value ]: the first could be -v", `[ "@@" "$x" ]`, "[ reads options such as -v"},
		{"test value value", `test "$x" @@`, "test reads options such as -v"},
		{"printf value value", `printf @@ "$x" %s`, "printf reads options such as -v"},
		{"replacement", `echo "${x/a/@@}"`, "cannot stand in a ${x/…/…} replacement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusedAt(t, tt.run); !strings.Contains(got, tt.want) {
				t.Errorf("script %q\ngot  %s\nwant …%s…", tt.run, got, tt.want)
			}
		})
	}
}

// What is data stays accepted: arguments of programs that do not run them,
// assignments, quoted strings, heredocs to cat, input to programs that read
// it as data, and values given to interpreters after their program.
func TestShellDataPlacesAccepted(t *testing.T) {
	for _, run := range []string{
		`echo "@@"`, `echo @@`, `printf '%s\n' "@@" '@@' $'@@'`, `x=@@; y="a @@ b"`, `export X=@@`, `local x=@@`,
		`git commit -m "@@"`, `git log --grep @@`, `git clone -- @@ dir`, `go test -run @@ ./...`, `cp -R @@ dest`,
		`cd @@ && ls`, `curl -d "@@" https://example.com`, `mytool --name @@`, `./script.sh @@`,
		"cat <<EOF\n@@\nEOF", "cat > f <<-EOF\n\t@@\n\tEOF", `cat <<< "@@"`, `echo "@@" | grep -c x`,
		`echo "@@" | python3 parse.py`, `echo @@ | jq .`, `echo @@ | sed s/a/b/`, `echo @@ | xargs echo`,
		"while read -r l; do echo \"$l\"; done <<EOF\n@@\nEOF", "sh -c 'cat > f' <<EOF\n@@\nEOF", `x=$(cat <<EOF
@@
EOF
)`,
		`bash -c 'echo "$1"' bash @@`, `sh -c -- 'echo "$1"' sh "@@"`, `bash -ec 'echo "$1"' bash @@`,
		`bash script.sh @@`, `python3 script.py @@`, `python3 -c 'import sys; print(sys.argv[1])' @@`,
		`python3 -m pytest -k @@`, `node -e 'console.log(process.argv[1])' -- @@`, `perl -e 'print @ARGV' -- @@`,
		`awk -v x=@@ '{print x}' f`, `jq --arg x @@ '.a = $x' f.json`, `sed 's/a/b/' -- @@`,
		`env X=@@ sh -c 'echo "$X"'`, `timeout 5 mytool @@`, `xargs -0 echo @@`, `find . -name @@ -exec rm {} \;`,
		`docker build -t @@ .`, `source ./x.sh @@`, `trap 'cleanup' @@`, `diff <(echo @@) f`, `echo "$(printf %s @@)"`,
		`echo ${x:-@@}`, `: "${x:=@@}"`, `[[ $x == @@ ]]`, `[[ -f @@ ]]`, `test @@ = x`, `[ "@@" = "$x" ]`, `printf '%s\n' "@@" "@@"`, `case @@ in a) ;; esac`,
		`for x in @@; do echo "$x"; done`, `printf x > @@`, `# @@`, `declare -A m=([@@]=1)`, `declare -a a=(@@)`,
	} {
		if _, errs := Prepare(segments(strings.ReplaceAll(run, "@@", "${{ vars.v }}"))); len(errs) > 0 {
			t.Errorf("%q refused: %v", run, errs)
		}
	}
}

// The places bash evaluates as arithmetic take only a plain integer, checked
// when the step runs; with an integer they work, in dash too where POSIX.
func TestShellArithmeticPlacesTakeOnlyIntegers(t *testing.T) {
	shells := map[string]string{
		"dash": testtool.LookPath(t, "dash", "Debian's dash package"),
		"bash": testtool.LookPath(t, "bash", "Debian's bash package"),
	}
	tests := []struct {
		src   string
		posix bool
	}{
		{`for ((i=0; i<${{ vars.v }}; i++)); do :; done; echo $((i+1))`, false},
		{`for (( i=${{ vars.v }}; i<42; i++ )); do :; done; echo $i`, false},
		{`declare -i n; n=${{ vars.v }}; echo $((n+1))`, false},
		{`declare -i n; n+=${{ vars.v }}; echo $((n+1))`, false},
		{`typeset -i n; export n=${{ vars.v }}; echo $((n+1))`, false},
		{`local_f() { local -i n; n=${{ vars.v }}; echo $((n+1)); }; local_f`, false},
		{`declare -i n; for n in ${{ vars.v }}; do echo $((n+1)); done`, false},
		{`declare -i n; read n <<< "${{ vars.v }}"; echo $((n+1))`, false},
		{`declare -i n; : "${n:=${{ vars.v }}}"; echo $((n+1))`, false},
		{`declare -n r=n; r=${{ vars.v }}; echo $((n+1))`, false},
		{`let n=${{ vars.v }}+1; echo $n`, false},
		{`(( n = ${{ vars.v }} + 1 )); echo $n`, false},
		{`[[ ${{ vars.v }} -lt 42 ]] && echo 42`, false},
		{`a[${{ vars.v }}]=42; echo ${a[41]}`, false},
		{`a=([${{ vars.v }}]=42); echo ${a[41]}`, false},
		{`a=(1); echo $(( ${#a[${{ vars.v }}-41]} + 41 ))`, false},
		{`echo $(( ${{ vars.v }} + 1 ))`, true},
		{`x=$(( 1 + ${{ vars.v }} )); echo $x`, true},
		{`echo "$(( $(printf %s ${{ vars.v }}) + 1 ))"`, true},
		{`i=0; while [ $((i)) -lt $(( ${{ vars.v }} + 1 )) ]; do i=$((i+1)); done; echo $i`, true},
	}
	for _, tt := range tests {
		tpl := prepare(t, tt.src)
		for _, sl := range tpl.slots {
			if !sl.arith {
				t.Errorf("%s: not seen as arithmetic", tt.src)
			}
		}
		for name, sh := range shells {
			if name == "dash" && !tt.posix {
				continue
			}
			cmd, err := render(tpl, "41")
			if err != nil {
				t.Fatal(err)
			}
			x := exec.Command(sh, "-c", cmd.Script)
			x.Env = append(os.Environ(), cmd.Env...)
			if out, err := x.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "42" {
				t.Errorf("%s, %s with 41: %q %v", name, tt.src, out, err)
			}
		}
		for _, bad := range []string{"a[$(touch PWNED)]", "1+1", "x", "", " 1", "0x10", "99999999999999999999"} {
			if _, err := render(tpl, bad); err == nil || !strings.Contains(err.Error(), "plain integer") {
				t.Errorf("%s: value %q accepted in arithmetic (%v)", tt.src, bad, err)
			}
		}
	}
}

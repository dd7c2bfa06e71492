package main

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/release"
	"github.com/planrunner/runner/internal/testutil/testtool"
)

// Every subcommand's --help starts with a usage line naming its arguments
// and shows an example.
func TestEveryCommandHelp(t *testing.T) {
	for _, c := range commands {
		if c.name == "worker" {
			continue // runner-temporal's own binary answers its --help
		}
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, t.TempDir(), c.name, "--help")
			out := r.stdout
			if r.code != 0 || r.stderr != "" {
				t.Errorf("exit %d, stderr %q", r.code, r.stderr)
			}
			if h := runCLI(t, t.TempDir(), "help", c.name); h.code != 0 || h.stdout != r.stdout {
				t.Errorf("runner help %s: exit %d, and not what --help prints:\n%s", c.name, h.code, h.stdout)
			}
			if !strings.HasPrefix(out, "Usage: runner "+c.name) || !strings.Contains(out, "Examples:\n  runner ") {
				t.Errorf("help lacks a usage line or an example:\n%s", out)
			}
		})
	}
}

// Help that was asked for is on stdout with exit 0, to be piped into grep
// or less; a mistake is on stderr with exit 2.
func TestHelpGoesWhereAsked(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string // a line the help has on stdout
		stderr string // what the mistake says on stderr
	}{
		{[]string{"--help"}, 0, "Commands:", ""},
		{[]string{"-h"}, 0, "Commands:", ""},
		{[]string{"help"}, 0, "Commands:", ""},
		{[]string{"run", "--help"}, 0, "  --reuse value", ""},
		{[]string{"run", "-h"}, 0, "  --reuse value", ""},
		{[]string{"help", "run"}, 0, "  --reuse value", ""},
		{[]string{"help", "apply"}, 0, "Usage: runner apply", ""},
		{[]string{"help", "board"}, 0, "Usage: runner board", ""},
		{[]string{"help", "worker"}, 0, "  --expect-store-id", ""},
		{[]string{"-q", "help", "report"}, 0, "Usage: runner report", ""},
		{[]string{}, 2, "", "Commands:"},
		{[]string{"help", "rnu"}, 2, "", `unknown command "rnu" (did you mean "run"?)`},
		{[]string{"run", "--reprot"}, 2, "", "unknown flag --reprot"},
		{[]string{"run"}, 2, "", "want one plan file"},
	}
	for _, tt := range tests {
		r := runCLI(t, t.TempDir(), tt.args...)
		if r.code != tt.code {
			t.Errorf("runner %v: exit %d, want %d", tt.args, r.code, tt.code)
		}
		if tt.stdout == "" && r.stdout != "" || !strings.Contains(r.stdout, tt.stdout) {
			t.Errorf("runner %v: stdout %q, want it to have %q", tt.args, r.stdout, tt.stdout)
		}
		if tt.stderr == "" && r.stderr != "" || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("runner %v: stderr %q, want it to have %q", tt.args, r.stderr, tt.stderr)
		}
	}
}

// run's help has its common flags first and the Temporal engine's under a
// heading of their own after them.
func TestRunHelpGroupsEngineFlags(t *testing.T) {
	r := runCLI(t, t.TempDir(), "help", "run")
	common, engine, ok := strings.Cut(r.stdout, "\nWith --engine temporal:\n")
	if !ok {
		t.Fatalf("no Temporal heading in:\n%s", r.stdout)
	}
	for _, f := range []string{"--var", "--agent", "--workdir", "--out", "--report", "--reuse", "--engine", "--log-level"} {
		if !strings.Contains(common, "\n  "+f+" ") && !strings.Contains(common, "\n  "+f+"\n") {
			t.Errorf("%s is not among the common flags", f)
		}
	}
	for _, f := range []string{"--temporal", "--namespace", "--task-queue", "--tls-ca", "--store", "--heartbeat-timeout", "--sync-back"} {
		if !strings.Contains(engine, "\n  "+f+" ") && !strings.Contains(engine, "\n  "+f+"\n") {
			t.Errorf("%s is not under the Temporal heading", f)
		}
		if strings.Contains(common, "\n  "+f+" ") {
			t.Errorf("%s is among the common flags", f)
		}
	}
}

// Global flags work before the subcommand too.
func TestGlobalFlagsBeforeCommand(t *testing.T) {
	wd := t.TempDir()
	r := runCLI(t, wd, "-q", "--log-format", "json", "run", testdata("display.yaml"))
	if r.code != 1 || !strings.HasSuffix(strings.TrimSpace(r.stdout), "blackboard.json") || strings.Contains(r.stdout, "blackboard: ") {
		t.Errorf("exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, wd, "--dry-run", "run", "x"); r.code != 2 || !strings.Contains(r.stderr, "not a global flag") {
		t.Errorf("a command flag before the command: exit %d %s", r.code, r.stderr)
	}
}

// Completion, as bash does it: commands, flags, run ids and latest,
// board operations and keys, step labels, agent fields, and file names
// only where a file is expected. zsh and fish ask the same helper.
func TestCompletion(t *testing.T) {
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "plan.yaml"), []byte("version: 1\nname: c\nagents:\n  coder: {provider: script, responses: [\"ok\"]}\nsteps:\n  - {label: ask, type: llm, agent: coder, prompt: hi}\n  - {label: save, type: command, run: \"true\"}\n"), 0o644)
	if r := runCLI(t, wd, "run", "plan.yaml", "-q"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, wd, "board", "latest", "put", "task:q4", `"x"`); r.code != 0 {
		t.Fatalf("put: %d %s", r.code, r.stderr)
	}
	list := runCLI(t, wd, "runs", "--json")
	var runsList []struct{ ID string }
	json.Unmarshal([]byte(list.stdout), &runsList)
	if len(runsList) != 1 {
		t.Fatalf("runs: %s", list.stdout)
	}
	id := runsList[0].ID

	bin := t.TempDir()
	os.Symlink(binary, filepath.Join(bin, "runner"))
	script := runCLI(t, wd, "completion", "bash").stdout
	cases := []struct{ line, want string }{
		{"runner rep", "replay report"},
		{"runner report ", "latest " + id + " .runner plan.yaml"},
		{"runner board " + id[:6], id},
		{"runner board latest ", "put get delete lock unlock list snapshot show watch conflicts"},
		{"runner board latest get task:", "q4"},
		{"runner replay latest --from ", "ask save"},
		{"runner run plan.yaml --agent coder.m", "coder.model="},
		{"runner run plan.yaml --re", "--report --reuse"},
		{"runner run plan.yaml --log-format ", "console json"},
		{"runner run pl", "plan.yaml"},
		{"runner completion ", "bash zsh fish"},
		{"runner version ", ""},
	}
	var prog strings.Builder
	prog.WriteString(script)
	for _, c := range cases {
		fmt.Fprintf(&prog, "COMP_LINE=%q; COMP_POINT=${#COMP_LINE}; _runner; echo \"${COMPREPLY[*]}\"\n", c.line)
	}
	cmd := exec.Command("bash", "-c", prog.String())
	cmd.Dir, cmd.Env = wd, append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, c := range cases {
		if i >= len(got) || got[i] != c.want {
			t.Errorf("%q completes to %q, want %q", c.line, at(got, i), c.want)
		}
	}
	for _, sh := range []string{"zsh", "fish"} {
		if r := runCLI(t, wd, "completion", sh); r.code != 0 || !strings.Contains(r.stdout, "runner __complete") {
			t.Errorf("%s: exit %d %s", sh, r.code, r.stdout)
		}
	}
	if r := runCLI(t, t.TempDir(), "completion", "tcsh"); r.code != 2 {
		t.Errorf("unknown shell: exit %d", r.code)
	}
}

func at(s []string, i int) string {
	if i < len(s) {
		return s[i]
	}
	return "(nothing)"
}

// `go install …@v1.2.3` from a module proxy gives a binary that says
// v1.2.3, and the runs it makes carry it. The proxy is a directory
// (GOPROXY=file://…) holding this repository as version v1.2.3; the
// dependencies come from the proxy the environment names (go env GOPROXY)
// and are checked against our go.sum. Everything the go command keeps
// (module cache, GOPATH, GOBIN, HOME) is a temporary directory, so the test
// neither reads nor leaves anything in the user's: it once wrote the fake
// v1.2.3 into the shared module cache and passed later only by reading it
// back. The build cache (GOCACHE) stays the user's, as for go test itself:
// it is keyed by content, so nothing in it can make the test pass.
func TestGoInstallReportsTaggedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runner from a module proxy")
	}
	const mod, ver = "github.com/planrunner/runner", "v1.2.3"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	proxy := moduleProxy(t, root, mod, ver, nil)
	// The Temporal module as it is, requiring the root module at the
	// commit it names, which the proxy serves as a module proxy makes it
	// from the repository: its hashes are checked against temporal/go.sum.
	moduleProxyAt(t, proxy, filepath.Join(root, "temporal"), mod+"/temporal", ver, nil)
	serveRequiredRoot(t, proxy, root)

	goproxy, gosumdb, gocache := goEnv(t, "GOPROXY"), goEnv(t, "GOSUMDB"), goEnv(t, "GOCACHE")
	if goproxy == "off" || goproxy == "" {
		noNetwork(t, "GOPROXY="+goproxy+": the dependencies cannot be downloaded")
	}
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	gobin := filepath.Join(tmp, "bin")
	for _, d := range []string{home, gobin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := append(os.Environ(),
		"HOME="+home,
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"GOENV=off", // the user's go env file is not read; what it set is passed on explicitly
		"GOPATH="+filepath.Join(tmp, "gopath"),
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOBIN="+gobin,
		"GOCACHE="+gocache,
		// The module cache is read-only unless -modcacherw, and t.TempDir
		// could not remove it.
		"GOFLAGS=-modcacherw",
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+goproxy,
		"GOPRIVATE=", "GONOPROXY=",
		// Only our fake version is unknown to the checksum database; the
		// dependencies are verified against the go.sum it carries.
		"GOSUMDB="+gosumdb, "GONOSUMDB="+mod,
		"GOWORK=off", "GOTOOLCHAIN=local")

	// One command installs runner and its helpers; one the Temporal
	// worker (the README's two install lines).
	for _, pkg := range []string{mod + "/cmd/...@" + ver, mod + "/temporal/cmd/runner-temporal@" + ver} {
		start := time.Now()
		cmd := exec.Command("go", "install", pkg)
		cmd.Dir = tmp
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			if unreachable(string(out)) {
				noNetwork(t, fmt.Sprintf("go install could not download the dependencies through %s: %v\n%s", goproxy, err, out))
			}
			t.Fatalf("go install %s: %v\n%s", pkg, err, out)
		}
		t.Logf("go install %s took %s", pkg, time.Since(start).Round(time.Second))
	}
	installed, _ := os.ReadDir(gobin)
	var names []string
	for _, e := range installed {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "runner runner-otel runner-temporal"; got != want {
		t.Errorf("installed %q, want %q", got, want)
	}
	// runner's helpers work from where go install put them: mcp in
	// runner itself, trace through runner-otel beside it, the worker
	// through runner-temporal.
	for _, args := range [][]string{{"mcp", "--help"}, {"trace", "--help"}, {"worker", "--help"}} {
		c := exec.Command(filepath.Join(gobin, "runner"), args...)
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "Usage: runner "+args[0]) {
			t.Errorf("runner %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	tr := exec.Command(filepath.Join(gobin, "runner"), "trace", "nosuch.json", "-o", "-")
	tr.Env = env
	if out, _ := tr.CombinedOutput(); strings.Contains(string(out), "not installed") {
		t.Errorf("runner trace does not find runner-otel beside it: %s", out)
	}
	rtv := exec.Command(filepath.Join(gobin, "runner-temporal"), "version")
	rtv.Env = env
	if out, err := rtv.Output(); err != nil || !strings.HasPrefix(string(out), "runner-temporal ") {
		t.Errorf("runner-temporal version: %q %v", out, err)
	}

	version := exec.Command(filepath.Join(gobin, "runner"), "version")
	version.Env = env
	out, err := version.Output()
	if err != nil || strings.TrimSpace(string(out)) != "runner "+ver {
		t.Fatalf("runner version: %q %v", out, err)
	}
	wd := t.TempDir()
	if err := os.WriteFile(filepath.Join(wd, "p.yaml"), []byte("version: 1\nsteps:\n  - {label: a, type: command, run: echo hi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(filepath.Join(gobin, "runner"), "run", "p.yaml", "-q")
	run.Dir = wd
	run.Env = env
	bb, err := run.Output()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(strings.TrimSpace(string(bb)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"runner_version": "`+ver+`"`) && !strings.Contains(string(data), `"runner_version":"`+ver+`"`) {
		t.Errorf("the saved run does not carry %s", ver)
	}
}

// moduleProxy writes a GOPROXY directory serving the module at root (this
// repository, without the nested temporal module) as mod@ver.
func moduleProxy(t *testing.T, root, mod, ver string, gomod []byte) string {
	t.Helper()
	proxy := t.TempDir()
	moduleProxyAt(t, proxy, root, mod, ver, gomod)
	return proxy
}

// serveRequiredRoot adds to the proxy directory the root module at the
// version temporal/go.mod requires, made from the commit checked out
// (internal/release checks that this is the version's content).
func serveRequiredRoot(t *testing.T, proxy, root string) {
	t.Helper()
	testtool.LookPath(t, "git", "apt-get install git")
	// git as a module proxy runs it, without the user's configuration.
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	v, err := release.Required(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(proxy, filepath.FromSlash(release.Root), "@v")
	zf, err := os.Create(filepath.Join(dir, v+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := release.Zip(zf, root, v, "HEAD")
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{v + ".info": []byte(`{"Version":"` + v + `"}`), v + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// moduleProxyAt adds the module at root to the proxy directory as
// mod@ver, with gomod as its go.mod (nil: its own).
func moduleProxyAt(t *testing.T, proxy, root, mod, ver string, gomod []byte) {
	t.Helper()
	dir := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if gomod == nil {
		var err error
		if gomod, err = os.ReadFile(filepath.Join(root, "go.mod")); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{
		"list":        []byte(ver + "\n"),
		ver + ".info": []byte(`{"Version":"` + ver + `","Time":"2026-11-23T00:00:00Z"}`),
		ver + ".mod":  gomod,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	zf, err := os.Create(filepath.Join(dir, ver+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zw := zip.NewWriter(zf)
	err = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if fi.IsDir() {
			if rel != "." && (strings.HasPrefix(fi.Name(), ".") || fi.Name() == "testdata" || fi.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		w, err := zw.Create(mod + "@" + ver + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "go.mod" {
			data = gomod
		}
		_, err = w.Write(data)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// goEnv is `go env name` in the test's own environment.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// unreachable reports whether go's output says the network failed (no
// proxy reachable), not the build.
func unreachable(out string) bool {
	for _, s := range []string{"dial tcp", "no such host", "connection refused", "network is unreachable",
		"i/o timeout", "TLS handshake timeout", "proxyconnect", "server misbehaving", "Temporary failure in name resolution"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// noNetwork stops a test that needs the module proxy: a skip on a
// developer's machine offline, a failure under CI=true (CI must be able to
// check that the published module installs).
func noNetwork(t *testing.T, why string) {
	t.Helper()
	if testtool.InCI() {
		t.Fatalf("CI=true and no module proxy: %s", why)
	}
	t.Skipf("no module proxy (this test fails instead under CI=true): %s", why)
}

package main

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
			out := r.stdout + r.stderr
			if r.code != 0 {
				t.Errorf("exit %d", r.code)
			}
			if !strings.HasPrefix(out, "Usage: runner "+c.name) || !strings.Contains(out, "Examples:\n  runner ") {
				t.Errorf("help lacks a usage line or an example:\n%s", out)
			}
		})
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

// The completion scripts name every command and its flags; bash parses
// the bash one.
func TestCompletion(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := runCLI(t, t.TempDir(), "completion", sh)
		if r.code != 0 {
			t.Fatalf("%s: exit %d %s", sh, r.code, r.stderr)
		}
		for _, want := range []string{"report", "completion", "validate"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s completion lacks %s", sh, want)
			}
		}
		if sh == "bash" {
			if !strings.Contains(r.stdout, `run) flags="--agent`) {
				t.Errorf("bash completion lacks run's flags:\n%s", r.stdout)
			}
			f := filepath.Join(t.TempDir(), "c.bash")
			os.WriteFile(f, []byte(r.stdout), 0o644)
			if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v %s", err, out)
			}
		}
	}
	if r := runCLI(t, t.TempDir(), "completion", "tcsh"); r.code != 2 {
		t.Errorf("unknown shell: exit %d", r.code)
	}
}

// `go install …@v1.2.3` from a module proxy gives a binary that says
// v1.2.3, and the runs it makes carry it. The proxy is a directory
// (GOPROXY=file://…) holding this repository as version v1.2.3, with the
// dependencies served from the local module cache.
func TestGoInstallReportsTaggedVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runner from a module proxy")
	}
	const mod, ver = "github.com/planrunner/runner", "v1.2.3"
	root, _ := filepath.Abs("../..")
	proxy := t.TempDir()
	dir := filepath.Join(proxy, mod, "@v")
	os.MkdirAll(dir, 0o755)
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "list"), []byte(ver+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ver+".info"), []byte(`{"Version":"`+ver+`","Time":"2026-11-23T00:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(dir, ver+".mod"), gomod, 0o644)
	zf, err := os.Create(filepath.Join(dir, ver+".zip"))
	if err != nil {
		t.Fatal(err)
	}
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
		_, err = w.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	zw.Close()
	zf.Close()

	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", mod+"/cmd/runner@"+ver)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "GOSUMDB=off", "GONOSUMDB="+mod, "GONOSUMCHECK=1",
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download"),
		"GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "runner"), "version").Output()
	if err != nil || strings.TrimSpace(string(out)) != "runner "+ver {
		t.Fatalf("version: %q %v", out, err)
	}
	wd := t.TempDir()
	os.WriteFile(filepath.Join(wd, "p.yaml"), []byte("version: 1\nsteps:\n  - {label: a, type: command, run: echo hi}\n"), 0o644)
	run := exec.Command(filepath.Join(gobin, "runner"), "run", "p.yaml", "-q")
	run.Dir = wd
	bb, err := run.Output()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(strings.TrimSpace(string(bb)))
	if !strings.Contains(string(data), `"runner_version": "`+ver+`"`) && !strings.Contains(string(data), `"runner_version":"`+ver+`"`) {
		t.Errorf("the saved run does not carry %s", ver)
	}
}

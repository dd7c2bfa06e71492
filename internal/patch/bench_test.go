package patch

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// The benchmark applies one ~10 MB diff spanning many Go source files,
// made by git from dense random edits, and runs git apply on the same
// input for comparison. Trees live under $TMPDIR: on a disk, the cost is
// mostly fsync (which git apply does not do); on tmpfs it is the work.

type benchInput struct {
	tree map[string][]byte // relative path -> original content
	diff []byte            // paths a/orig/<p>, b/new/<p>: strip 2
}

var (
	benchOnce sync.Once
	bench     benchInput
	benchErr  error
)

func benchSetup(b *testing.B) *benchInput {
	b.Helper()
	needGit(b)
	benchOnce.Do(func() { benchErr = makeBench(b) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return &bench
}

func makeBench(b testing.TB) error {
	src, all := goSources(b)
	rng := rand.New(rand.NewPCG(10, 20))
	tmp := b.TempDir()
	bench.tree = map[string][]byte{}
	size := 0
	for _, i := range rng.Perm(len(all)) {
		if size >= 10<<20 {
			break
		}
		p := all[i]
		orig, err := os.ReadFile(filepath.Join(src, p))
		if err != nil {
			return err
		}
		donor, _ := os.ReadFile(filepath.Join(src, all[rng.IntN(len(all))]))
		ed := orig
		// About one edit per 20 lines: a dense diff, as a big refactor.
		for range strings.Count(string(orig), "\n")/80 + 1 {
			ed = edit(rng, ed, splitKeep(donor))
		}
		bench.tree[p] = orig
		for _, d := range []struct {
			dir  string
			data []byte
		}{{"orig", orig}, {"new", ed}} {
			full := filepath.Join(tmp, d.dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, d.data, 0o644); err != nil {
				return err
			}
		}
		size += len(orig) / 3 // a rough guess of its share of the diff
	}
	cmd := exec.Command("git", "-c", "core.quotepath=false", "diff", "--no-index", "--no-color", "--no-ext-diff", "orig", "new")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+tmp)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return err
	}
	bench.diff = out
	return nil
}

func (in *benchInput) reset(b *testing.B, dir string) {
	b.Helper()
	if err := os.RemoveAll(dir); err != nil {
		b.Fatal(err)
	}
	writeTree(b, dir, in.tree)
}

func benchApply(b *testing.B, opt Options) {
	in := benchSetup(b)
	dir := filepath.Join(b.TempDir(), "tree")
	b.SetBytes(int64(len(in.diff)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		in.reset(b, dir)
		b.StartTimer()
		if _, err := Apply(context.Background(), dir, in.diff, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply10MB: the whole apply, with backups and fsync.
func BenchmarkApply10MB(b *testing.B) { benchApply(b, Options{Strip: 2}) }

// BenchmarkParse10MB and BenchmarkParse98MB: reading the diff alone, at
// 1x and 10x (the diff ten times over, 243,650 hunks: what Apply refuses
// by its limits, which these raise), to show the reading grows with the
// diff and no faster.
func BenchmarkParse10MB(b *testing.B) { benchParse(b, 1) }
func BenchmarkParse98MB(b *testing.B) { benchParse(b, 10) }

func benchParse(b *testing.B, times int) {
	in := benchSetup(b)
	diff := []byte(strings.Repeat(string(in.diff), times))
	b.SetBytes(int64(len(diff)))
	b.ResetTimer()
	for range b.N {
		if _, _, err := parse(diff, 1<<30); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply10MBNoBackup: without the backup copies.
func BenchmarkApply10MBNoBackup(b *testing.B) { benchApply(b, Options{Strip: 2, NoBackup: true}) }

// BenchmarkCheck10MB: parse, read and place everything; write nothing.
func BenchmarkCheck10MB(b *testing.B) { benchApply(b, Options{Strip: 2, Check: true}) }

// The process benchmarks below time whole processes on the same diff and
// tree, so they compare like with like: runner apply (built from this
// checkout) beside git apply and GNU patch. BenchmarkApply10MB above is
// in process and must not be set beside them.

// BenchmarkRunnerApply10MB: `runner apply`, a whole process.
func BenchmarkRunnerApply10MB(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/runner").CombinedOutput(); err != nil {
		b.Fatalf("building runner: %v\n%s", err, out)
	}
	benchProcess(b, func(dir, pf string) *exec.Cmd {
		return exec.Command(bin, "apply", "-q", "--dir", dir, "-p2", pf)
	})
}

// BenchmarkGitApply10MB: git apply, a whole process.
func BenchmarkGitApply10MB(b *testing.B) {
	benchProcess(b, func(dir, pf string) *exec.Cmd {
		cmd := exec.Command("git", "apply", "-p2", pf)
		cmd.Dir = dir
		return cmd
	})
}

// BenchmarkGNUPatch10MB: GNU patch, a whole process (skipped where it is
// not installed; .ci/install installs it).
func BenchmarkGNUPatch10MB(b *testing.B) {
	testtool.LookPath(b, "patch", "GNU patch; apt-get install patch, which .ci/install does")
	benchProcess(b, func(dir, pf string) *exec.Cmd {
		return exec.Command("patch", "-s", "-p2", "-d", dir, "-i", pf)
	})
}

// benchProcess times the command made for a fresh copy of the tree.
func benchProcess(b *testing.B, command func(dir, diffFile string) *exec.Cmd) {
	in := benchSetup(b)
	top := b.TempDir()
	dir := filepath.Join(top, "tree")
	pf := filepath.Join(top, "p.diff")
	if err := os.WriteFile(pf, in.diff, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in.diff)))
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		in.reset(b, dir)
		b.StartTimer()
		cmd := command(dir, pf)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", cmd.Args[0], err, out)
		}
	}
}

// BenchmarkCheckSmall: a check of a 10-line diff of one small file, in
// process: what runner apply --check costs beyond starting the program.
func BenchmarkCheckSmall(b *testing.B) {
	dir := b.TempDir()
	writeTree(b, dir, map[string][]byte{"x.go": []byte("package x\n\nfunc F() int {\n\treturn 1\n}\n\nfunc G() int {\n\treturn 2\n}\n")})
	diff := []byte("--- a/x.go\n+++ b/x.go\n@@ -2,8 +2,8 @@\n \n func F() int {\n-\treturn 1\n+\treturn 10\n }\n \n func G() int {\n-\treturn 2\n+\treturn 20\n }\n")
	b.ReportAllocs()
	for range b.N {
		if _, err := Apply(context.Background(), dir, diff, Options{Strip: DetectStrip, Check: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDumpBench writes the benchmark's tree and diff to $PATCH_BENCH_DUMP
// (tree/ and bench.diff), to time runner apply and git apply from a shell.
func TestDumpBench(t *testing.T) {
	out := os.Getenv("PATCH_BENCH_DUMP")
	if out == "" {
		t.Skip("set PATCH_BENCH_DUMP=DIR to write the benchmark input")
	}
	needGit(t)
	if err := makeBench(t); err != nil {
		t.Fatal(err)
	}
	writeTree(t, filepath.Join(out, "tree"), bench.tree)
	if err := os.WriteFile(filepath.Join(out, "bench.diff"), bench.diff, 0o644); err != nil {
		t.Fatal(err)
	}
}

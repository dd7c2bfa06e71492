package patch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCorpusOracle runs git apply and GNU patch on the same trials as
// TestCorpus, for comparison only (set PATCH_ORACLE=1). For them "wrong"
// includes half-applied trees and leftover .rej/.orig files.
func TestCorpusOracle(t *testing.T) {
	if os.Getenv("PATCH_ORACLE") == "" {
		t.Skip("set PATCH_ORACLE=1 to compare with git apply and GNU patch")
	}
	cases := buildCorpus(t, 300)
	base := fastTempDir(t)
	tools := []struct {
		name string
		cmd  func(pf, strip string, reverse bool) *exec.Cmd
	}{
		{"git apply", func(pf, strip string, reverse bool) *exec.Cmd {
			args := []string{"apply", strip, pf}
			if reverse {
				args = append(args, "-R")
			}
			return exec.Command("git", args...)
		}},
		{"GNU patch", func(pf, strip string, reverse bool) *exec.Cmd {
			args := []string{strip, "--batch", "--forward", "-s", "-i", pf}
			if reverse {
				args = append(args, "-R")
			}
			return exec.Command("patch", args...)
		}},
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool.cmd("", "", false).Args[0]); err != nil {
			t.Logf("%s: not installed", tool.name)
			continue
		}
		t.Logf("%s:", tool.name)
		k := 0
		for vi, v := range variants {
			rng := randFor(vi)
			var tl tally
			for ci := range cases {
				tr := v.make(rng, &cases[ci])
				k++
				dir := filepath.Join(base, strconv.Itoa(k))
				writeTree(t, dir, tr.tree)
				pf := filepath.Join(base, "p.diff")
				if err := os.WriteFile(pf, tr.diff, 0o644); err != nil {
					t.Fatal(err)
				}
				strip := "-p1"
				if hasPrefixes := bytesContains(tr.diff, "\n+++ b/") || bytesHasPrefix(tr.diff, "+++ b/"); !hasPrefixes {
					strip = "-p0"
				}
				cmd := tool.cmd(pf, strip, tr.opt.Reverse)
				cmd.Dir = dir
				err := cmd.Run()
				got := readTree(t, dir)
				switch {
				case err == nil && !tr.already && sameTree(got, tr.want):
					tl.right++
				case sameTree(got, tr.tree) && tr.already && err == nil:
					tl.right++
				case sameTree(got, tr.tree):
					tl.refused++
				default:
					tl.wrong++
				}
				os.RemoveAll(dir)
			}
			t.Logf("  %-22s right %4d  refused %4d  wrong or partial %4d", v.name, tl.right, tl.refused, tl.wrong)
		}
	}
}

func bytesContains(b []byte, s string) bool  { return strings.Contains(string(b), s) }
func bytesHasPrefix(b []byte, s string) bool { return strings.HasPrefix(string(b), s) }

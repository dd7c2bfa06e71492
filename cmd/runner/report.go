package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/steps"
	"github.com/planrunner/runner/internal/sys/safefs"
	"github.com/planrunner/runner/internal/view/junit"
	"github.com/planrunner/runner/internal/view/report"
)

func cmdReport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("report", stdout, stderr)
	out := fs.String("o", "", "where to write it (default: report.html or junit.xml beside the blackboard; - for stdout)")
	format := fs.String("format", "html", "html: the run as one page; junit: its test steps (and steps) as JUnit XML, for CI")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(stderr, fs, "want one blackboard.json, got %d arguments", len(pos))
	}
	if *format != "html" && *format != "junit" {
		return usageErr(stderr, fs, "--format %q: want html or junit", *format)
	}
	if pos[0], err = runs.Resolve(pos[0], "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	// A run on Temporal that still runs is reported as it stands now.
	remote, path, err := runs.OpenRemote(pos[0], g.mask.Writer(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "runner report: %v\n", err)
		return exitUsage
	}
	var b *board.Board
	if remote != nil {
		b, err = remote.Board()
		remote.Close()
	} else {
		b, err = board.Load(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runner report: %v\n", err)
		return exitUsage
	}
	if *format == "junit" {
		return writeJUnit(b, path, *out, stdout, stderr)
	}
	if *out == "-" {
		if abs, err := filepath.Abs(path); err == nil && remote == nil {
			path = abs
		}
		if err := report.WriteWith(stdout, b, report.Options{BoardPath: path}); err != nil {
			fmt.Fprintf(stderr, "runner report: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	path, err = writeReport(b, path, *out)
	if err != nil {
		fmt.Fprintf(stderr, "runner report: %v\n", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, path)
	return exitOK
}

// reportPath is where a run's report goes by default: beside its board.
func reportPath(boardPath string) string {
	return filepath.Join(filepath.Dir(boardPath), "report.html")
}

// writeReport renders b to out (default: beside the board), through a temp
// file and a rename, so a reader never sees half a page.
func writeReport(b *board.Board, boardPath, out string) (string, error) {
	write := safefs.WriteOutput // a file the person named: /dev/stdout too
	if out == "" {
		out, write = reportPath(boardPath), safefs.WriteFile
	}
	if abs, err := filepath.Abs(boardPath); err == nil {
		boardPath = abs // the report's answer lines work from any directory
	}
	return out, write(out, board.FileMode, func(w io.Writer) error {
		return report.WriteWith(w, b, report.Options{BoardPath: boardPath})
	})
}

// writeJUnit writes the run's tests as JUnit XML to out (default:
// junit.xml beside the board; - for stdout), through a temp file and a
// rename like the page.
func writeJUnit(b *board.Board, boardPath, out string, stdout, stderr io.Writer) int {
	doc := junit.FromBoard(b, steps.Registry())
	if out == "-" {
		if err := junit.Write(stdout, doc); err != nil {
			fmt.Fprintf(stderr, "runner report: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	write := safefs.WriteOutput
	if out == "" {
		out, write = filepath.Join(filepath.Dir(boardPath), "junit.xml"), safefs.WriteFile
	}
	err := write(out, board.FileMode, func(w io.Writer) error { return junit.Write(w, doc) })
	if err != nil {
		fmt.Fprintf(stderr, "runner report: %v\n", err)
		return exitFailed
	}
	fmt.Fprintln(stdout, out)
	return exitOK
}

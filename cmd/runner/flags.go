package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/planrunner/runner/internal/plans"
	"github.com/planrunner/runner/internal/sys/boot"
	"github.com/planrunner/runner/internal/sys/mask"
	"github.com/planrunner/runner/internal/view/ghactions"
	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// globals are the flags every command takes.
type globals struct {
	logFormat string
	logLevel  string
	quiet     bool
	view      *progressView // the progress display, once logger made one
	// mask hides the run's secrets in everything written to stderr: logs
	// in both formats, the progress display, the final error line. It
	// starts empty and learns the secrets once the plan is known.
	mask   *mask.Masker
	report bool   // run, resume --report: write report.html at the end
	junit  string // run, resume --junit FILE: write JUnit XML at the end
	runID  string // set before the logger is made: every event carries it
	output bool   // run, resume --show-output: stream command and test output
	// gh is stderr as a GitHub Actions step writes it (nil elsewhere):
	// workflow commands off but for runner's own.
	gh   *ghactions.Stream
	otlp string // run, resume, replay, trace --otlp-endpoint
}

// Help that was asked for (--help) goes to stdout, to be read and piped;
// a usage mistake goes to stderr.
func newFlags(name string, stdout, stderr io.Writer) (*flag.FlagSet, *globals) {
	fs := flag.NewFlagSet("runner "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = commandUsage(fs, name, stdout)
	g := &globals{mask: mask.New()}
	// runner's default format: console on a terminal or in Actions' log,
	// else json (globals.format).
	boot.LogFlags(fs, &g.logFormat, &g.logLevel, &g.quiet)
	return fs, g
}

// parse parses flags and positional arguments in any order, as users of
// `runner run plan.yaml --var x=1` expect.
// A mistake in a flag gets one line saying what is wrong (with the flag
// it was probably meant to be) and one of usage, not the whole help.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := quietParse(fs, args); err != nil {
			return nil, err
		}
		if err := nonNegative(fs); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// quietParse is fs.Parse with its error said briefly; --help still
// prints the whole help.
func quietParse(fs *flag.FlagSet, args []string) error {
	out, full := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = full
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		full()
	default:
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			msg = "unknown flag " + dashed(name) + strings.Replace(plans.Suggest(name, names), `"`, `"`+dashed(""), 1)
		}
		if m := invalidValue.FindStringSubmatch(msg); m != nil {
			msg = dashed(m[2]) + " " + m[1] + ": " + wantOf(fs.Lookup(m[2]), m[3])
		}
		fmt.Fprintf(out, "%s: %s\n", fs.Name(), msg)
		fmt.Fprintf(out, "`%s --help` shows its usage and flags\n", fs.Name())
	}
	return err
}

// invalidValue is the flag package's message for a value its flag
// refused, said again as `--name "value": why`.
var invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-(\S+): (.*)$`)

// wantOf says what a flag of the flag package's own kinds takes, in
// place of its "parse error".
func wantOf(f *flag.Flag, why string) string {
	if f == nil || why != "parse error" && why != "value out of range" {
		return why
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return why
	}
	switch g.Get().(type) {
	case int, int64, uint, uint64:
		if why == "value out of range" {
			return "too large"
		}
		return "want a whole number"
	case float64:
		return "want a number"
	case time.Duration:
		return "want a duration (90s, 5m, 1h)"
	case bool:
		return "want true or false"
	}
	return why
}

// dirFlag refuses a directory flag (--dir, --workdir) that names no
// directory: a mistyped one would otherwise read as an empty directory
// (no runs, nothing spent, nothing remembered).
func dirFlag(stderr io.Writer, fs *flag.FlagSet, name, dir string) (int, bool) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usageErr(stderr, fs, "--%s %s: not a directory", name, dir), false
	}
	return 0, true
}

// dashed is a flag's name as users type it: -q, --log-format.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// nonNegative refuses a negative number given to any numeric flag (a
// count, a seq, a version, a duration, -p): none of them has a meaning
// below 0, and taken as given, some ran forever (`watch --count -5`).
// Flags left at their default (-1 for "not given") are not checked.
func nonNegative(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		g, ok := f.Value.(flag.Getter)
		if !ok || err != nil {
			return
		}
		neg := false
		switch v := g.Get().(type) {
		case int:
			neg = v < 0
		case int64:
			neg = v < 0
		case float64:
			neg = v < 0
		case time.Duration:
			neg = v < 0
		}
		if neg {
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			err = fmt.Errorf("%s%s %v: want 0 or more", dash, f.Name, g.Get())
		}
	})
	if err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
	}
	return err
}

// optInt is a number flag that may be left out (then -1): its help shows
// no default, as -1 is not a value one may give.
type optInt struct{ p *int64 }

func newOptInt(fs *flag.FlagSet, p *int64, name, usage string) {
	*p = -1
	fs.Var(optInt{p}, name, usage)
}

func (o optInt) String() string {
	if o.p == nil || *o.p < 0 {
		return ""
	}
	return strconv.FormatInt(*o.p, 10)
}

func (o optInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("want a whole number")
	}
	*o.p = n
	return nil
}

func (o optInt) Get() any { return *o.p }

// usageErr prints a usage problem and returns exit code 2.
func usageErr(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	return exitUsage
}

// flagErr handles a flag parsing error: -h is not an error.
func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr }) // an *os.File (stdin too), or a mask over one
	return ok && term.IsTerminal(int(f.Fd()))
}

// format is the log format: as given, else console on a terminal and in
// GitHub Actions' log (which shows it with its colours and groups), JSON
// elsewhere.
func (g *globals) format(stderr io.Writer) string {
	if g.logFormat != "" {
		return g.logFormat
	}
	if isTerminal(stderr) || onActions() {
		return "console"
	}
	return "json"
}

// logger builds the zerolog logger the flags ask for. On a terminal the
// default level is warn when the progress display shows the steps, as it
// says what the step logs would.
func (g *globals) logger(stderr io.Writer, progress bool) (zerolog.Logger, error) {
	tty := isTerminal(stderr)
	rawStderr := stderr
	format := g.format(stderr)
	stderr = g.mask.Writer(stderr)
	var w io.Writer
	switch format {
	case "json":
		w = stderr
	case "console":
		out := stderr
		if progress {
			// Log lines go through the display, which keeps its live
			// block of running steps below them.
			g.view = newProgress(stderr, tty, useColor(tty))
			g.view.gh, g.view.output = g.gh, g.output
			if f, ok := rawStderr.(*os.File); ok && tty {
				g.view.width = func() int {
					w, _, err := term.GetSize(int(f.Fd()))
					if err != nil {
						return 0
					}
					return w
				}
			}
			out = g.view
		}
		cw := zerolog.ConsoleWriter{Out: out, NoColor: !useColor(tty), TimeFormat: "15:04:05"}
		if progress {
			// Inside the display a warning reads like its other lines: a
			// mark, no clock, no level code, no run id (its first line
			// says it).
			cw.PartsExclude = []string{zerolog.TimestampFieldName}
			cw.FieldsExclude = []string{"run"}
			cw.FormatLevel = displayLevel(!cw.NoColor)
		}
		w = eventLines{console: cw, out: out, color: !cw.NoColor}
		if progress {
			w = dropStepEvents{w} // the display shows each step once
		}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: want console or json", format)
	}
	level := zerolog.InfoLevel
	if progress {
		level = zerolog.WarnLevel
	}
	if g.quiet {
		level = zerolog.ErrorLevel
	}
	if g.logLevel != "" {
		l, err := zerolog.ParseLevel(strings.ToLower(g.logLevel))
		if err != nil || g.logLevel == "" {
			return zerolog.Nop(), fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel)
		}
		level = l
	}
	ctx := zerolog.New(w).Level(level).With().Timestamp()
	if g.runID != "" {
		ctx = ctx.Str("run", g.runID)
	}
	return ctx.Logger(), nil
}

// dropStepEvents keeps the engine's "step finished" events out of the
// console when the progress display shows the steps itself.
type dropStepEvents struct{ w io.Writer }

func (d dropStepEvents) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"message":"step finished"`)) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// displayLevel marks a log line in the live display as its step lines
// are marked: ! for a warning, ✗ for an error.
func displayLevel(color bool) zerolog.Formatter {
	return func(i any) string {
		mark, code := "·", "90"
		switch i {
		case "warn":
			mark, code = "!", "33"
		case "error", "fatal", "panic":
			mark, code = "✗", "31"
		}
		if !color {
			return mark
		}
		return "\x1b[" + code + "m" + mark + "\x1b[0m"
	}
}

package boot

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// Log is what the logging flags say.
type Log struct {
	Format string // console, json, or "" for the binary's default
	Level  string // debug, info, warn, error, or "" for the binary's default
	Quiet  bool   // errors only
}

// LogFlags defines --log-format, --log-level and -q on fs, into format,
// level and quiet.
func LogFlags(fs *flag.FlagSet, format, level *string, quiet *bool) {
	fs.StringVar(format, "log-format", "", "how logs are written on stderr: console (lines for people) or json (one object a line)")
	fs.StringVar(level, "log-level", "", "the least important logs shown: debug, info, warn or error")
	fs.BoolVar(quiet, "q", false, "quiet: errors only, no progress")
}

// Flags defines the logging flags on fs into l.
func (l *Log) Flags(fs *flag.FlagSet) { LogFlags(fs, &l.Format, &l.Level, &l.Quiet) }

// CheckFormat refuses a format other than console and json.
func CheckFormat(format string) error {
	if format != "console" && format != "json" {
		return fmt.Errorf("--log-format %q: want console or json", format)
	}
	return nil
}

// ParseLevel is --log-level's value as a level; "" is def, and -q makes
// it error whatever else was given.
func ParseLevel(level string, quiet bool, def zerolog.Level) (zerolog.Level, error) {
	l := def
	if level != "" {
		var err error
		if l, err = zerolog.ParseLevel(strings.ToLower(level)); err != nil {
			return zerolog.NoLevel, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
		}
	}
	if quiet {
		l = zerolog.ErrorLevel
	}
	return l, nil
}

// IsTerminal reports whether w is a terminal (an *os.File, or a writer
// over one that tells its Fd).
func IsTerminal(w any) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// Logger is the logger l asks for on w: in format (l.Format, else
// defaultFormat), console lines for people or JSON objects, at l's level
// (else info).
func (l Log) Logger(w io.Writer, defaultFormat string) (zerolog.Logger, error) {
	format := l.Format
	if format == "" {
		format = defaultFormat
	}
	if err := CheckFormat(format); err != nil {
		return zerolog.Nop(), err
	}
	level, err := ParseLevel(l.Level, l.Quiet, zerolog.InfoLevel)
	if err != nil {
		return zerolog.Nop(), err
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w, NoColor: !IsTerminal(w), TimeFormat: "15:04:05"}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

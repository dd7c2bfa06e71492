package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/planrunner/runner/board"
	"github.com/planrunner/runner/engine"
	"github.com/planrunner/runner/liveboard"
	"github.com/planrunner/runner/runs"
)

const boardUsage = "board FILE put KEY VALUE [--ttl 60|60s] [--agent ID] [--topic T] [--expect-version N] | put - (JSON lines) | get KEY | delete KEY | list [PREFIX] | snapshot | show [--format md|json] | watch [--prefix P] [--topic T] | conflicts [KEY]"

// fakeNowEnv fixes the clock of `runner board` on a run no one owns (an
// RFC 3339 time), so TTL expiry can be tested without waiting.
const fakeNowEnv = "RUNNER_FAKE_NOW"

func cmdBoard(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("board", stderr)
	var ttl ttlFlag
	fs.Var(&ttl, "ttl", "put: the value expires after this many seconds (60) or this long (90s, 1h)")
	agent := fs.String("agent", "", "who reads or writes (default cli): its key patterns apply, writes are authored by it")
	topic := fs.String("topic", "", "put: the topic to publish on (default: the key's prefix before ':'); watch: only this topic")
	expect := fs.Int64("expect-version", -1, "put/delete: only if the key's version is N (0: the key must not exist)")
	format := fs.String("format", "md", "show: md or json")
	prefix := fs.String("prefix", "", "watch: only keys starting with this")
	count := fs.Int("count", 0, "watch: stop after this many lines (0: until the run ends or Ctrl-C)")
	since := fs.Int64("since", -1, "watch: start after this entry seq (default: changes from now on)")
	asJSON := fs.Bool("json", false, "get: print the whole entry as JSON")
	fs.Bool("force", false, "accepted for compatibility; writes are safe on live runs now")
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 2 {
		return usageErr(stderr, fs, "usage: runner %s", boardUsage)
	}
	path, op, rest := pos[0], pos[1], pos[2:]
	want := map[string][2]int{"list": {0, 1}, "get": {1, 1}, "put": {1, 2}, "delete": {1, 1}, "snapshot": {0, 0},
		"show": {0, 0}, "watch": {0, 0}, "conflicts": {0, 1}}
	n, ok := want[op]
	if !ok {
		return usageErr(stderr, fs, "unknown operation %q; usage: runner %s", op, boardUsage)
	}
	if len(rest) < n[0] || len(rest) > n[1] || (op == "put" && len(rest) == 1 && rest[0] != "-") {
		return usageErr(stderr, fs, "%s takes %s argument(s), got %d", op, argCount(n), len(rest))
	}
	if op == "show" && *format != "md" && *format != "json" {
		return usageErr(stderr, fs, "--format %q: want md or json", *format)
	}
	if *expect < -1 {
		return usageErr(stderr, fs, "--expect-version %d: want 0 or more", *expect)
	}
	// On a run no one owns, the saved plan's key patterns apply, and its
	// secrets (from this environment) are masked in what is written.
	opts := liveboard.Options{Redact: g.mask.String, Perms: func(run board.Run) map[string]board.Perms {
		p := runs.SavedPlan(run)
		if p == nil {
			return nil
		}
		g.learnSecrets(p)
		return engine.PlanPerms(p)
	}}
	if s := os.Getenv(fakeNowEnv); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return usageErr(stderr, fs, "%s=%q: want an RFC 3339 time", fakeNowEnv, s)
		}
		opts.Now = func() time.Time { return t }
	}
	// A run on Temporal that still runs is reached through a bridge; one
	// that has ended is its saved file.
	remote, path, err := openRemote(path, g, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitUsage
	}
	if op == "watch" {
		return boardWatch(path, remote, liveboard.Filter{Prefix: *prefix, Topic: *topic, After: *since}, opts, *count, stdout, stderr)
	}
	out, flush := buffered(stdout) // list, show and snapshot print a whole board
	defer flush()
	stdout = out
	opts.ReadOnly = op != "put" && op != "delete"
	var a liveboard.Access = remote
	if remote == nil {
		if a, err = liveboard.Open(path, opts); err != nil {
			fmt.Fprintf(stderr, "runner board: %v\n", err)
			return exitUsage
		}
	}
	defer a.Close()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "runner board: %s\n", strings.TrimPrefix(err.Error(), "board: "))
		return exitFailed
	}
	switch op {
	case "put", "delete":
		if op == "put" && len(rest) == 1 && rest[0] == "-" {
			return boardPutLines(a, *agent, *topic, stdin, stdout, stderr)
		}
		q := liveboard.WriteRequest{Key: rest[0], TTL: ttl.Seconds(), Agent: *agent, Topic: *topic, Delete: op == "delete"}
		if *expect >= 0 {
			q.ExpectVersion = expect
		}
		if op == "put" {
			q.Value = parseValue(rest[1])
		}
		e, err := a.Write(q)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "%s %s (version %d)\n", map[string]string{"put": "wrote", "delete": "deleted"}[op], e.Key, e.Version)
	case "get":
		e, ok, err := a.Read(*agent, rest[0])
		switch {
		case err != nil:
			return fail(err)
		case *asJSON && ok:
			writeJSON(stdout, seedEntry(e))
		case ok:
			fmt.Fprintln(stdout, valueText(e.Content))
		default:
			fmt.Fprintln(stdout, "null") // seed 001: a missing or expired key reads as null
		}
	case "list", "snapshot":
		p := ""
		if len(rest) > 0 {
			p = rest[0]
		}
		live, err := a.Live(p, *agent)
		if err != nil {
			return fail(err)
		}
		if op == "snapshot" {
			snap := map[string]any{}
			for _, e := range live {
				snap[e.Key] = seedEntry(e)
			}
			writeJSON(stdout, snap)
			return exitOK
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tVERSION\tAUTHOR\tTOPIC\tWRITTEN\tEXPIRES")
		for _, e := range live {
			exp := "-"
			if e.TTL != nil {
				exp = e.TS.Add(time.Duration(*e.TTL * float64(time.Second))).Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Key, e.Version, e.Author, orDash(e.Topic), e.TS.Format(time.RFC3339), exp)
		}
		tw.Flush()
	case "show", "conflicts":
		b, err := a.Board()
		if err != nil {
			return fail(err)
		}
		switch {
		case op == "conflicts":
			key := ""
			if len(rest) > 0 {
				key = rest[0]
			}
			for _, e := range b.Conflicts(key) {
				line, _ := json.Marshal(map[string]any{"seq": e.Seq, "ts": e.TS, "conflict": e.Content})
				fmt.Fprintln(stdout, string(line))
			}
		case *format == "json":
			writeJSON(stdout, map[string]any{"format": board.Format, "run": b.Run(), "steps": b.Steps(),
				"entries": b.Entries(), "recordings": b.Recordings()})
		default:
			b.Markdown(stdout)
		}
	}
	return exitOK
}

// boardPutLines makes one put per JSON line of stdin ({"key", "value",
// "ttl_s", "topic", "agent", "expect_version"}), each a write of its own,
// durable once it is reported. On a live run they go through the owner's
// socket; on a run no one owns, the lock is held for the whole batch (one
// load of the board, not one per put). It stops at the first failure.
func boardPutLines(a liveboard.Access, agent, topic string, stdin io.Reader, stdout, stderr io.Writer) int {
	dec := json.NewDecoder(stdin)
	for n := 1; ; n++ {
		var q liveboard.WriteRequest
		err := dec.Decode(&q)
		if err == io.EOF {
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(stderr, "runner board: stdin record %d: %v\n", n, err)
			return exitUsage
		}
		if q.Key == "" || q.Delete {
			fmt.Fprintf(stderr, "runner board: stdin record %d: want {\"key\": ..., \"value\": ...}\n", n)
			return exitUsage
		}
		if q.Agent == "" {
			q.Agent = agent
		}
		if q.Topic == "" {
			q.Topic = topic
		}
		e, err := a.Write(q)
		if err != nil {
			fmt.Fprintf(stderr, "runner board: stdin record %d: %s\n", n, strings.TrimPrefix(err.Error(), "board: "))
			return exitFailed
		}
		fmt.Fprintf(stdout, "wrote %s (version %d)\n", e.Key, e.Version)
	}
}

// boardWatch prints the board's changes as JSON lines until the count is
// reached, or Ctrl-C. A run that ends does not end the watch: writes made
// afterwards (by the CLI) are shown too.
func boardWatch(path string, remote *bridged, f liveboard.Filter, opts liveboard.Options, count int, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	enc := json.NewEncoder(stdout)
	n := 0
	done := errors.New("done")
	send := func(c liveboard.Change) error {
		if err := enc.Encode(c); err != nil {
			return err
		}
		f.After = c.Seq
		if n++; count > 0 && n >= count {
			return done
		}
		return nil
	}
	var err error
	if remote != nil {
		// A run on Temporal: its changes until it ends, then the saved
		// file's, as for a run in one process.
		err = remote.Watch(ctx, f, send)
		remote.Close()
		if err != nil || ctx.Err() != nil {
			return watchEnd(err, done, stderr)
		}
	}
	return watchEnd(liveboard.Watch(ctx, path, f, opts, 200*time.Millisecond, send), done, stderr)
}

func watchEnd(err, done error, stderr io.Writer) int {
	if err != nil && !errors.Is(err, done) {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// seedEntry is an entry in seed 001's BlackboardEntry shape, with the
// version and topic beside it.
func seedEntry(e board.Entry) map[string]any {
	var ttl any
	if e.TTL != nil {
		ttl = *e.TTL
	}
	m := map[string]any{"key": e.Key, "value": e.Content, "source_agent": e.Author,
		"timestamp": e.TS.UTC().Format(time.RFC3339Nano), "ttl": ttl, "version": e.Version}
	if e.Topic != "" {
		m["topic"] = e.Topic
	}
	return m
}

// ttlFlag is a TTL given as seconds (60) or as a duration (60s, 1h).
type ttlFlag time.Duration

func (t *ttlFlag) String() string   { return time.Duration(*t).String() }
func (t *ttlFlag) Seconds() float64 { return time.Duration(*t).Seconds() }

func (t *ttlFlag) Set(s string) error {
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		if n <= 0 || n > 1e9 {
			return fmt.Errorf("%s seconds is out of range", s)
		}
		*t = ttlFlag(time.Duration(n * float64(time.Second)))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want seconds (60) or a duration (90s, 1h)")
	}
	*t = ttlFlag(d)
	return nil
}

func argCount(n [2]int) string {
	if n[0] == n[1] {
		return strconv.Itoa(n[0])
	}
	return fmt.Sprintf("%d to %d", n[0], n[1])
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseValue reads a value given on the command line: JSON when it is
// JSON (a number, a list...), else the text as it is.
func parseValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}

func valueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/view/boardview"
)

const boardUsage = "board FILE put KEY VALUE [--ttl 60|60s] [--agent ID] [--topic T] [--expect-version N] [--handoff] | put - (JSON lines) | get KEY | delete KEY | lock KEY --ttl D [--owner O] [--wait D] [-- CMD ARGS...] | unlock KEY [--owner O] | list [PREFIX] [--json] | snapshot | show [--format md|json] | watch [--prefix P] [--topic T] | watch --step LABEL [--visit N] [--json] | conflicts [KEY] | entries [--section S] [--role R] [--author A] [--label L] [--topic T] [--since SEQ|TIME] [--until TIME] | entry ID (write and read are put and get)"

// boardFlags are the flags of `runner board`, one set for every
// operation (a flag an operation does not use is ignored, as before).
type boardFlags struct {
	ttl    ttlFlag
	agent  string
	topic  string
	expect int64
	// handoff: put takes the key over knowingly (no conflict recorded)
	handoff bool
	format  string
	prefix  string
	count   int
	since   int64
	asJSON  bool
	// entries: the filters (--topic and --since are shared with watch;
	// --since is a time here when given as one).
	section, role, author, label string
	sinceTime, until             time.Time
	// lock, unlock: who holds the lease (default the agent), how long
	// to wait for it
	owner string
	wait  time.Duration
	// watch --step: the step whose streamed answer to follow, and which
	// of its visits (0: the one running, else the next)
	step  string
	visit int
}

// boardOp is one operation of `runner board FILE OP ARGS...`: how many
// arguments it takes, whether it changes the board, and what it does.
type boardOp struct {
	min, max int
	write    bool
	run      func(c *boardCall, args []string) int
}

// boardOpNamed is the operation called name (a switch, not a map built at
// start, so other commands pay nothing for it).
func boardOpNamed(name string) (boardOp, bool) {
	switch name {
	case "put", "write": // write and read: seed 001's names
		return boardOp{1, 2, true, boardPut}, true
	case "read":
		return boardOp{1, 1, false, boardGet}, true
	case "entries":
		return boardOp{0, 0, false, boardEntries}, true
	case "entry":
		return boardOp{1, 1, false, boardEntry}, true
	case "delete":
		return boardOp{1, 1, true, boardDelete}, true
	case "lock", "unlock":
		return boardOp{1, 1, true, nil}, true // leaseCall: it opens the board for each try
	case "get":
		return boardOp{1, 1, false, boardGet}, true
	case "list":
		return boardOp{0, 1, false, boardList}, true
	case "snapshot":
		return boardOp{0, 0, false, boardSnapshot}, true
	case "show":
		return boardOp{0, 0, false, boardShow}, true
	case "conflicts":
		return boardOp{0, 1, false, boardConflicts}, true
	case "watch":
		return boardOp{0, 0, false, nil}, true // boardWatch: it needs no open board
	}
	return boardOp{}, false
}

// boardCall is what an operation works with: the board open for it, the
// flags, the streams.
type boardCall struct {
	a              liveboard.Access
	f              *boardFlags
	stdin          io.Reader
	stdout, stderr io.Writer
}

func cmdBoard(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runBoard(args, stdin, stdout, stderr, nil)
}

// runBoard is `runner board` reading the clock now on a run no one owns
// (nil: the system clock), so that tests can move time past a TTL.
func runBoard(args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	fs, g := newFlags("board", stdout, stderr)
	f := &boardFlags{}
	fs.Var(&f.ttl, "ttl", "put: the value expires after this many seconds (60) or this long (90s, 1h)")
	fs.StringVar(&f.agent, "agent", "", "who reads or writes (default cli): its key patterns apply, writes are authored by it")
	fs.StringVar(&f.topic, "topic", "", "put: the topic to publish on (default: the key's prefix before ':'); watch, entries: only this topic")
	fs.BoolVar(&f.handoff, "handoff", false, "put: take the key over from its current author knowingly (a hand-off): no conflict is recorded")
	newOptInt(fs, &f.expect, "expect-version", "put/delete: only if the key's version is `N` (0: the key must not exist)")
	fs.StringVar(&f.format, "format", "md", "show: md or json")
	fs.StringVar(&f.prefix, "prefix", "", "watch: only keys starting with this")
	fs.IntVar(&f.count, "count", 0, "watch: stop after this many lines (0: until the run ends or Ctrl-C)")
	fs.StringVar(&f.step, "step", "", "watch: print the answer this step's model is streaming, as it comes, until the step ends")
	fs.IntVar(&f.visit, "visit", 0, "watch --step: this visit of the step (default: the one running, else the next)")
	f.since = -1
	fs.Var(sinceFlag{&f.since, &f.sinceTime}, "since", "watch, entries: start after the entry numbered `SEQ` (watch default: changes from now on); entries: or at an RFC 3339 time")
	fs.Var(timeFlag{&f.until}, "until", "entries: only entries written before this RFC 3339 `TIME`")
	fs.StringVar(&f.section, "section", "", "entries: only this section")
	fs.StringVar(&f.role, "role", "", "entries: only this role")
	fs.StringVar(&f.author, "author", "", "entries: only entries written by this author")
	fs.StringVar(&f.label, "label", "", "entries: only entries of this step label")
	fs.BoolVar(&f.asJSON, "json", false, "get: print the whole entry as JSON; list: one JSON line per key")
	fs.StringVar(&f.owner, "owner", "", "lock, unlock: who holds the lease (default the agent, cli)")
	fs.DurationVar(&f.wait, "wait", 0, "lock: wait this long for another owner's lease to be released or expire (0: refuse at once)")
	// lock KEY -- CMD ARGS...: the command runs while the lease is held.
	var held []string
	if i := slices.Index(args, "--"); i >= 0 && slices.Contains(args[:i], "lock") {
		args, held = args[:i], args[i+1:]
	}
	pos, err := parse(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) < 2 {
		return usageErr(stderr, fs, "usage: runner %s", boardUsage)
	}
	path, name, rest := pos[0], pos[1], pos[2:]
	if path, err = runs.Resolve(path, "."); err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	op, err := checkBoardArgs(name, rest, f)
	if err != nil {
		return usageErr(stderr, fs, "%v", err)
	}
	if len(held) > 0 && name != "lock" {
		return usageErr(stderr, fs, "a command after -- is for lock")
	}
	if (name == "put" || name == "write" || name == "lock") && !fileExists(path) && !fileExists(liveboard.RemotePath(path)) {
		// Seed 001: a board is started by its first write, no plan needed.
		created, err := board.CreateStandalone(path, board.Run{RunnerVersion: version})
		if err != nil {
			fmt.Fprintf(stderr, "runner board: %v\n", err)
			return exitUsage
		}
		if created {
			fmt.Fprintf(stderr, "runner board: made a new board, %s\n", pos[0])
		}
	}
	// On a run no one owns, the saved plan's key patterns apply, and its
	// secrets (from this environment) are masked in what is written
	// (runs.OpenBoard, which the MCP server shares).
	bo := runs.BoardOptions{ReadOnly: !op.write, Mask: g.mask, Now: now, Stderr: stderr}
	// get, list and snapshot show live keys only: a run's file is read
	// for those (its step records and plan source not kept), the plan parsed
	// only for --agent's key patterns (docs/benchmarks.md "board get and
	// list on a run's file").
	bo.KeysOnly = name == "get" || name == "read" || name == "list" || name == "snapshot"
	if name == "lock" || name == "unlock" {
		l := &leaseCall{path: path, bo: bo, f: f, key: rest[0], cmd: held, stdin: stdin, stdout: stdout, stderr: stderr}
		if name == "unlock" {
			return l.unlock()
		}
		return l.lock()
	}
	if op.run == nil {
		// A run on Temporal that still runs is reached through a bridge;
		// one that has ended is its saved file.
		remote, path, err := runs.OpenRemote(path, g.mask.Writer(stderr))
		if err != nil {
			fmt.Fprintf(stderr, "runner board: %v\n", err)
			return exitUsage
		}
		bo.ReadOnly = false // as before: a watch reads through the writer's path
		if f.step != "" {
			if remote != nil {
				remote.Close()
				fmt.Fprintf(stderr, "runner board: watch --step: a run on Temporal does not serve its steps' streamed answers; `runner report` shows them once recorded\n")
				return exitFailed
			}
			return boardWatchStep(path, f, runs.LiveOptions(bo), stdout, stderr)
		}
		return boardWatch(path, remote, liveboard.Filter{Prefix: f.prefix, Topic: f.topic, After: f.since}, runs.LiveOptions(bo), f.count, stdout, stderr)
	}
	if !op.write {
		// A read keeps the file's bytes alive (entries' values are read
		// from them, board.LoadForRead), so the garbage of decoding
		// counts on top of them: collected sooner, a 100 MB board is
		// read in about 1.8 times its size instead of 2.1, for no
		// measurable CPU (docs/benchmarks.md "Reading a large board").
		debug.SetGCPercent(50)
	}
	out, flush := buffered(stdout) // list, show and snapshot print a whole board
	defer flush()
	a, _, err := runs.OpenBoard(path, bo)
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitUsage
	}
	defer a.Close()
	return op.run(&boardCall{a: a, f: f, stdin: stdin, stdout: out, stderr: stderr}, rest)
}

// checkBoardArgs finds operation name and checks its arguments and flags.
func checkBoardArgs(name string, rest []string, f *boardFlags) (boardOp, error) {
	op, ok := boardOpNamed(name)
	switch {
	case !ok:
		return op, fmt.Errorf("unknown operation %q; usage: runner %s", name, boardUsage)
	case len(rest) < op.min || len(rest) > op.max || ((name == "put" || name == "write") && len(rest) == 1 && rest[0] != "-"):
		return op, fmt.Errorf("%s takes %s argument(s), got %d", name, argCount(op.min, op.max), len(rest))
	case name == "show" && f.format != "md" && f.format != "json":
		return op, fmt.Errorf("--format %q: want md or json", f.format)
	case f.step == "" && f.visit != 0:
		return op, errors.New("--visit is for watch --step")
	case f.step != "" && name != "watch":
		return op, errors.New("--step is for watch")
	case f.step != "" && (f.prefix != "" || f.topic != "" || f.since >= 0 || f.count != 0):
		return op, errors.New("watch --step follows a step's answer: --prefix, --topic, --since and --count are for the board's changes")
	case f.visit < 0:
		return op, fmt.Errorf("--visit %d: want 1 or more", f.visit)
	case name == "watch" && !f.sinceTime.IsZero():
		return op, errors.New("watch --since takes an entry's seq, not a time")
	case !f.sinceTime.IsZero() && !f.until.IsZero() && !f.until.After(f.sinceTime):
		return op, fmt.Errorf("--until %s is not after --since %s: no entry can match", f.until.Format(time.RFC3339Nano), f.sinceTime.Format(time.RFC3339Nano))
	}
	return op, nil
}

// fail reports an operation's error: exit 1.
func (c *boardCall) fail(err error) int {
	fmt.Fprintf(c.stderr, "runner board: %s\n", strings.TrimPrefix(err.Error(), "board: "))
	return exitFailed
}

// write puts or deletes one key as the flags say.
func (c *boardCall) write(q liveboard.WriteRequest, done string) int {
	q.TTL, q.Agent, q.Topic, q.Handoff = c.f.ttl.Seconds(), c.f.agent, c.f.topic, c.f.handoff
	if c.f.expect >= 0 {
		q.ExpectVersion = &c.f.expect
	}
	if err := q.Check(); err != nil { // bad usage: before the board is touched
		fmt.Fprintf(c.stderr, "runner board: %v\n", err)
		return exitUsage
	}
	e, err := c.a.Write(q)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(c.stdout, "%s %s (version %d)\n", done, e.Key, e.Version)
	return exitOK
}

// boardPut is `put KEY VALUE`, or `put -`: one put per JSON line of stdin.
func boardPut(c *boardCall, args []string) int {
	if len(args) == 1 {
		return boardPutLines(c.a, c.f.agent, c.f.topic, c.stdin, c.stdout, c.stderr)
	}
	return c.write(liveboard.WriteRequest{Key: args[0], Value: parseValue(args[1])}, "wrote")
}

// boardDelete is `delete KEY`.
func boardDelete(c *boardCall, args []string) int {
	return c.write(liveboard.WriteRequest{Key: args[0], Delete: true}, "deleted")
}

// boardGet is `get KEY`: the value, the whole entry with --json, null for
// a key missing or expired (docs/live-board.md).
func boardGet(c *boardCall, args []string) int {
	e, ok, err := c.a.Read(c.f.agent, args[0])
	switch {
	case err != nil:
		return c.fail(err)
	case c.f.asJSON && ok:
		writeJSON(c.stdout, seedEntry(e))
	case ok:
		fmt.Fprintln(c.stdout, valueText(e.Content))
	default:
		fmt.Fprintln(c.stdout, "null")
	}
	return exitOK
}

// boardList is `list [PREFIX]`: the live keys as a table.
func boardList(c *boardCall, args []string) int {
	live, err := c.a.Live(optArg(args), c.f.agent)
	if err != nil {
		return c.fail(err)
	}
	if c.f.asJSON {
		for _, e := range live {
			line, _ := json.Marshal(seedEntry(e))
			fmt.Fprintln(c.stdout, string(line))
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVERSION\tAUTHOR\tTOPIC\tWRITTEN\tEXPIRES")
	for _, e := range live {
		exp := "-"
		if e.TTL != nil {
			exp = e.TS.Add(time.Duration(*e.TTL * float64(time.Second))).Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", e.Key, e.Version, e.Author, orDash(e.Topic), e.TS.Format(time.RFC3339), exp)
	}
	tw.Flush()
	return exitOK
}

// boardSnapshot is `snapshot`: the live entries as one JSON object by key.
func boardSnapshot(c *boardCall, args []string) int {
	live, err := c.a.Live("", c.f.agent)
	if err != nil {
		return c.fail(err)
	}
	snap := map[string]any{}
	for _, e := range live {
		snap[e.Key] = seedEntry(e)
	}
	writeJSON(c.stdout, snap)
	return exitOK
}

// boardShow is `show [--format md|json]`: the whole board.
func boardShow(c *boardCall, args []string) int {
	b, err := c.a.Board()
	if err != nil {
		return c.fail(err)
	}
	if c.f.format == "json" {
		writeJSON(c.stdout, map[string]any{"format": board.Format, "run": b.Run(), "steps": b.Steps(),
			"entries": b.Entries(), "recordings": b.Recordings()})
		return exitOK
	}
	boardview.Markdown(c.stdout, b)
	return exitOK
}

// boardConflicts is `conflicts [KEY]`: one JSON line per conflict.
func boardConflicts(c *boardCall, args []string) int {
	b, err := c.a.Board()
	if err != nil {
		return c.fail(err)
	}
	for _, e := range b.Conflicts(optArg(args)) {
		line, _ := json.Marshal(map[string]any{"seq": e.Seq, "ts": e.TS, "conflict": e.Content})
		fmt.Fprintln(c.stdout, string(line))
	}
	return exitOK
}

// boardEntries is `entries`: the board's entries (every record, not only
// the live keys) that match the filters, one JSON line each, oldest first.
func boardEntries(c *boardCall, args []string) int {
	b, err := c.a.Board()
	if err != nil {
		return c.fail(err)
	}
	q := board.Filter{Section: c.f.section, Role: c.f.role, Author: c.f.author, Label: c.f.label,
		Topic: c.f.topic, Since: c.f.sinceTime, Until: c.f.until}
	if c.f.since > 0 {
		q.AfterSeq = c.f.since
	}
	for _, e := range b.Query(q) {
		line, err := json.Marshal(e)
		if err != nil {
			return c.fail(fmt.Errorf("entry %d: %w", e.Seq, err))
		}
		fmt.Fprintln(c.stdout, string(line))
	}
	return exitOK
}

// boardEntry is `entry ID`: the entry with that id as JSON; an id the
// board does not hold is an error (unlike a missing key, an id names one
// record that was written, so its absence is a mistake in the id).
func boardEntry(c *boardCall, args []string) int {
	b, err := c.a.Board()
	if err != nil {
		return c.fail(err)
	}
	e, ok := b.EntryByID(args[0])
	if !ok {
		return c.fail(fmt.Errorf("no entry has id %q", args[0]))
	}
	writeJSON(c.stdout, e)
	return exitOK
}

// optArg is an operation's optional argument, "" when not given.
func optArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// boardPutLines makes one put per JSON line of stdin ({"key", "value",
// "ttl_s", "topic", "agent", "expect_version"}), each a write of its own,
// durable once it is reported. On a live run they go through the owner's
// socket; on a run no one owns, the lock is held for the whole batch (one
// load of the board, not one per put). It stops at the first failure.
func boardPutLines(a liveboard.Access, agent, topic string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Each record is bounded as the socket bounds a write; the stream is
	// not (a producer may pipe puts for as long as it likes).
	lr := readlimit.NewReader(stdin, "a record on standard input", readlimit.Request)
	dec := json.NewDecoder(lr)
	for n := 1; ; n++ {
		var q liveboard.WriteRequest
		err := dec.Decode(&q)
		lr.Mark(dec.InputOffset())
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
		if err := q.Check(); err != nil {
			fmt.Fprintf(stderr, "runner board: stdin record %d: %v\n", n, err)
			return exitUsage
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
func boardWatch(path string, remote *runs.Bridged, f liveboard.Filter, opts liveboard.Options, count int, stdout, stderr io.Writer) int {
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

// boardWatchStep prints the answer a live run's step is streaming, as
// it comes (--json: its pieces as JSON lines, and the visit's end), until
// the step's visit ends or the run does. A run no one runs has no answer
// streaming: `runner report` shows its recorded answers.
func boardWatchStep(path string, f *boardFlags, opts liveboard.Options, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts.ReadOnly = true
	a, err := liveboard.Open(path, opts)
	if err != nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitUsage
	}
	defer a.Close()
	c, ok := a.(*liveboard.Client)
	if !ok {
		fmt.Fprintf(stderr, "runner board: watch --step: %s is not running, so no answer streams; `runner report %s` shows the recorded answers\n", path, path)
		return exitFailed
	}
	enc := json.NewEncoder(stdout)
	visit, call := f.visit, 0
	last := byte('\n')
	errDone := errors.New("done")
	err = c.StreamAnswer(ctx, f.step, visit, func(ch liveboard.AnswerChunk) error {
		if f.asJSON {
			if err := enc.Encode(ch); err != nil {
				return err
			}
		} else if ch.Text != "" {
			if call != 0 && ch.Call != call && last != '\n' {
				io.WriteString(stdout, "\n") // the next call's answer on a line of its own
			}
			if _, err := io.WriteString(stdout, ch.Text); err != nil {
				return err
			}
			call, last = ch.Call, ch.Text[len(ch.Text)-1]
		}
		if ch.End && (visit == 0 || ch.Visit == visit) {
			return errDone // the visit followed ended
		}
		return nil
	})
	if !f.asJSON && last != '\n' {
		io.WriteString(stdout, "\n")
	}
	if err != nil && !errors.Is(err, errDone) && ctx.Err() == nil {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func watchEnd(err, done error, stderr io.Writer) int {
	if err != nil && !errors.Is(err, done) {
		fmt.Fprintf(stderr, "runner board: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// seedEntry is an entry in the BlackboardEntry shape of docs/live-board.md, with the
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
	if h := e.Meta["handoff"]; h != nil {
		m["handoff"] = h // whom the writer took the key over from
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

// sinceFlag is --since: an entry's seq (a whole number) or an RFC 3339
// time (entries only).
type sinceFlag struct {
	seq *int64
	t   *time.Time
}

func (s sinceFlag) String() string {
	if s.t != nil && !s.t.IsZero() {
		return s.t.Format(time.RFC3339Nano)
	}
	if s.seq == nil || *s.seq < 0 {
		return ""
	}
	return strconv.FormatInt(*s.seq, 10)
}

func (s sinceFlag) Set(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return errors.New("want a seq (0 or more) or an RFC 3339 time")
		}
		*s.seq = n
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return errors.New("want a seq (a whole number) or an RFC 3339 time (2026-02-04T10:00:00Z)")
	}
	*s.t = t
	return nil
}

// timeFlag is an RFC 3339 time.
type timeFlag struct{ t *time.Time }

func (f timeFlag) String() string {
	if f.t == nil || f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339Nano)
}

func (f timeFlag) Set(v string) error {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return errors.New("want an RFC 3339 time (2026-02-04T10:00:00Z)")
	}
	*f.t = t
	return nil
}

func argCount(min, max int) string {
	if min == max {
		return strconv.Itoa(min)
	}
	return fmt.Sprintf("%d to %d", min, max)
}

// fileExists reports whether path names something (Lstat: a dangling
// link is something, not a place for a new board).
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseValue reads a value given on the command line by the rule a plan's
// board step follows (board.ParseValue).
func parseValue(s string) any { return board.ParseValue(s) }

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

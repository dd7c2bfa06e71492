// Package liveboard shares a live run's blackboard with other processes.
//
// The process that owns a run (it holds the run's lock, see
// boardlock.TryLock) serves its board over HTTP on a Unix socket beside
// blackboard.json, so `runner board put/get/watch...` and outside agents
// read and write the board the plan is running on, and the plan sees
// their writes at once. When no process owns the run, Open takes the
// lock itself and works on the file. Either way one process writes, so
// no write is lost and versions stay in order.
//
// It moves boards between processes and presents nothing: the markdown
// document a run keeps current is internal/view/boardview's. It may
// import internal/board (and its boardlock) and internal/sys; not the
// engine, the steps or the views.
package liveboard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/readlimit"
	"github.com/planrunner/runner/internal/sys/safefs"
)

// maxSocketPath is the longest socket path every Unix takes (sun_path is
// 108 bytes on Linux, 104 on macOS and the BSDs, both with a NUL).
const maxSocketPath = 103

// SocketPath is where the board of the blackboard file at path is served:
// beside it when its directory is private to this user (a run's own
// directory is), else in a fresh private directory (0700) under the
// system's temp dir, as when the path beside it is too long for a Unix
// socket (the owner records where, in the lock file). Either way the
// socket is in a directory no other user can enter from the moment it
// is made (and ServeSource makes it 0600 before it appears).
func SocketPath(path string) (sock string, private bool, err error) {
	sock = path + ".sock"
	if len(sock) <= maxSocketPath && privateDir(filepath.Dir(sock)) {
		return sock, false, nil
	}
	sum := sha256.Sum256([]byte(path))
	for _, base := range []string{os.TempDir(), "/tmp"} {
		dir, err := os.MkdirTemp(base, "rb-"+hex.EncodeToString(sum[:4])+"-")
		if err != nil {
			continue
		}
		if s := filepath.Join(dir, "s"); len(s) <= maxSocketPath {
			return s, true, nil
		}
		os.Remove(dir)
	}
	return "", false, fmt.Errorf("no socket path short enough for %s", path)
}

// Server serves one board.
type Server struct {
	Socket string // the socket's path

	src     Source
	ln      net.Listener
	srv     *http.Server
	private bool
	done    chan struct{}
	once    sync.Once
	answers *answers
}

// Source is what a Server serves: a run's board in this process
// (Serve), or a bridge to a board that lives elsewhere (a run on
// Temporal), so that every client speaks one protocol.
type Source interface {
	// Ping names the blackboard file served and its run.
	Ping() Ping
	Write(q WriteRequest) (board.Entry, error)
	Read(agent, key string) (board.Entry, bool, error)
	Live(prefix, agent string) ([]board.Entry, error)
	// Encode is the whole board as blackboard.json holds it.
	Encode() ([]byte, error)
	// Stream sends the changes matching f until stop closes or send
	// fails; it returns nil when the board stops changing for good (the
	// run ended).
	Stream(f Filter, send func(Change) error, stop <-chan struct{}) error
	// Answer records a person's answer to an input step the run waits at.
	Answer(a board.Answer) (AnswerReply, error)
}

// AnswerReply says how an answer was taken.
type AnswerReply struct {
	Label   string `json:"label"`
	Visit   int    `json:"visit"`
	Already bool   `json:"already"` // exactly this answer was recorded before
}

// Serve starts serving b (a file-backed board, owned by this process) on
// its socket; writes carry meta.via "socket".
func Serve(b *board.Board) (*Server, error) {
	if b.Path() == "" {
		return nil, errors.New("liveboard: the board is not backed by a file")
	}
	sock, private, err := SocketPath(b.Path())
	if err != nil {
		return nil, err
	}
	s, err := ServeSource(&boardSource{b: b}, sock)
	if err != nil {
		if private {
			os.RemoveAll(filepath.Dir(sock))
		}
		return nil, err
	}
	s.private = private
	return s, nil
}

// ServeSource serves src on the Unix socket sock.
func ServeSource(src Source, sock string) (*Server, error) {
	// A socket left by a killed owner would make Listen fail. Whoever calls
	// Serve holds the run's lock, so no live process is serving on it.
	if fi, err := os.Lstat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
		safefs.Remove(sock)
	} else if err := safefs.Found(sock, os.ModeSocket); err != nil {
		return nil, fmt.Errorf("liveboard: %w", err) // Listen would only say "address in use"
	}
	ln, err := listenPrivate(sock)
	if err != nil {
		return nil, fmt.Errorf("liveboard: %w", err)
	}
	s := &Server{Socket: sock, src: src, ln: ln, done: make(chan struct{}), answers: newAnswers()}
	if lv, ok := src.(lastVisitSource); ok {
		s.answers.lastVisit = lv.LastVisit
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/ping", s.ping)
	mux.HandleFunc("POST /v1/write", s.write)
	mux.HandleFunc("GET /v1/read", s.read)
	mux.HandleFunc("GET /v1/live", s.live)
	mux.HandleFunc("GET /v1/board", s.whole)
	mux.HandleFunc("GET /v1/watch", s.watch)
	mux.HandleFunc("POST /v1/answer", s.answer)
	mux.HandleFunc("GET /v1/stream", s.stream)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// listenPrivate listens on the Unix socket sock, which is the user's
// alone (0600) from the first moment it exists: it is bound in a fresh
// directory of its own (0700) beside sock, made 0600 there and renamed
// into place. A mode set after Listen at sock would leave an instant
// in which any user who can reach sock's directory connects; a umask
// around Listen would change the mode of what other goroutines create
// (and the processes they start) meanwhile.
func listenPrivate(sock string) (*net.UnixListener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(sock), ".s")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	at := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: at, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// Close would remove the socket at its first path: Server.Close
	// removes it where it ends up.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(at, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(at, sock); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// OnWrite sets a function told of every write made through a server
// started by Serve, after it is on the board (a replay recorder, say).
func (s *Server) OnWrite(f func(board.Entry)) {
	if bs, ok := s.src.(*boardSource); ok {
		bs.mu.Lock()
		bs.onWrite = f
		bs.mu.Unlock()
	}
}

// OnAnswer sets what takes a person's answer sent to a server started by
// Serve (the owner checks it against the step's form and records it).
func (s *Server) OnAnswer(f func(board.Answer) (AnswerReply, error)) {
	if bs, ok := s.src.(*boardSource); ok {
		bs.mu.Lock()
		bs.onAnswer = f
		bs.mu.Unlock()
	}
}

// Streamed adds a piece of the answer a running step visit's model is
// streaming (its call-th call), for the clients of GET /v1/stream. It is
// held in memory only, until the visit ends (StepEnded).
func (s *Server) Streamed(label string, visit, call int, text string) {
	s.answers.add(label, visit, call, text)
}

// StepEnded says a step visit ended: its streamed answer is dropped (the
// recording holds it whole), and its watchers are told.
func (s *Server) StepEnded(label string, visit int) { s.answers.end(label, visit) }

// Close stops serving: watch streams end, the socket is removed.
func (s *Server) Close() error {
	first := false
	s.once.Do(func() { close(s.done); first = true; s.answers.close() })
	err := s.srv.Close()
	if first {
		safefs.Remove(s.Socket)
	}
	if s.private {
		os.RemoveAll(filepath.Dir(s.Socket))
	}
	return err
}

// Ping is what a client checks before trusting a socket.
type Ping struct {
	PID   int    `json:"pid"`
	Path  string `json:"path"` // the blackboard file served
	RunID string `json:"run_id"`
}

func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	p := s.src.Ping()
	p.PID = os.Getpid()
	reply(w, http.StatusOK, p)
}

// WriteRequest is a put or a delete.
type WriteRequest struct {
	Key   string  `json:"key"`
	Value any     `json:"value,omitempty"`
	TTL   float64 `json:"ttl_s,omitempty"` // seconds; 0: no expiry
	Agent string  `json:"agent,omitempty"`
	Topic string  `json:"topic,omitempty"`
	// ExpectVersion makes the write a compare-and-set (0: the key must not
	// exist); nil: unconditional.
	ExpectVersion *int64 `json:"expect_version,omitempty"`
	Delete        bool   `json:"delete,omitempty"`
	// Handoff takes the key over from its current author knowingly: no
	// conflict is recorded (board.WriteOp.Handoff).
	Handoff bool `json:"handoff,omitempty"`
	// Lease makes the request a lease operation: "lock" takes or renews
	// the key for Owner for TTL (refused, kind "held", while another owner
	// holds it), "unlock" releases it (board.WriteOp.Lease).
	Lease string `json:"lease,omitempty"`
	// Owner holds the lease (default the agent).
	Owner string `json:"owner,omitempty"`
}

// Op is the board write the request asks for, authored by its agent
// (default "cli").
func (q WriteRequest) Op(via string) board.WriteOp {
	op := board.WriteOp{Key: q.Key, Value: q.Value, TTL: time.Duration(q.TTL * float64(time.Second)),
		Author: q.Agent, Role: "user", Topic: q.Topic, ExpectVersion: -1, Delete: q.Delete,
		Handoff: q.Handoff, Lease: q.Lease, Owner: q.Owner, Meta: map[string]any{"via": via}}
	if op.Author == "" {
		op.Author = "cli"
	}
	if q.ExpectVersion != nil {
		op.ExpectVersion = *q.ExpectVersion
	}
	return op
}

type errorReply struct {
	Error string `json:"error"`
	Kind  string `json:"kind"` // version, denied, absent, bad
}

func (s *Server) write(w http.ResponseWriter, r *http.Request) {
	var q WriteRequest
	if err := decodeBody(w, r, &q, readlimit.Request); err != nil {
		replyErr(w, err)
		return
	}
	if err := q.Check(); err != nil {
		replyErr(w, err)
		return
	}
	e, err := s.src.Write(q)
	if err != nil {
		replyErr(w, err)
		return
	}
	reply(w, http.StatusOK, e)
}

// Check refuses a request no board takes: a key board.CheckKey refuses
// (empty, NUL, control characters, invalid UTF-8), a negative
// expect_version, an agent name reserved for runner itself, a TTL out of
// range. Every way in checks it: the socket, the CLI on a run no one
// owns, a client before it sends.
func (q WriteRequest) Check() error {
	if err := board.CheckKey(q.Key); err != nil {
		return err
	}
	if q.Handoff && q.Delete {
		return errors.New("handoff is for a write: a delete takes nothing over")
	}
	if q.ExpectVersion != nil && *q.ExpectVersion < 0 {
		return fmt.Errorf("expect_version %d: want 0 or more (0: the key must not exist), or leave it out", *q.ExpectVersion)
	}
	if err := board.CheckOutsideAuthor(q.Agent); err != nil {
		return err
	}
	if q.Topic != "" {
		if err := board.CheckKey(q.Topic); err != nil {
			return fmt.Errorf("topic: %s", strings.Replace(err.Error(), "the key", "it", 1))
		}
	}
	if q.TTL < 0 || q.TTL > 1e9 || q.TTL != q.TTL {
		return fmt.Errorf("ttl %v s is out of range", q.TTL)
	}
	if q.Lease != "" {
		if q.ExpectVersion != nil {
			return fmt.Errorf("%s: a lease operation makes its own compare-and-set: leave out expect_version", q.Lease)
		}
		op := q.Op("")
		return op.CheckLease()
	}
	if q.Owner != "" {
		return errors.New("owner is for a lease operation (lock, unlock)")
	}
	return nil
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var a board.Answer
	if err := decodeBody(w, r, &a, readlimit.Answer); err != nil {
		replyErr(w, err)
		return
	}
	rep, err := s.src.Answer(a)
	if err != nil {
		replyErr(w, err)
		return
	}
	reply(w, http.StatusOK, rep)
}

// decodeBody reads a request's JSON body into v, refusing one larger than
// limit (readlimit.Limit applied) with an error that says so.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, limit int64) error {
	limit = readlimit.Limit(limit)
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &readlimit.TooLargeError{Name: "the request body", Limit: limit}
		}
		return fmt.Errorf("bad request body: %w", err)
	}
	return nil
}

// ReadReply is the answer to a read.
type ReadReply struct {
	Found bool         `json:"found"`
	Entry *board.Entry `json:"entry,omitempty"`
}

func (s *Server) read(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := board.CheckOutsideAuthor(q.Get("agent")); err != nil {
		replyErr(w, err)
		return
	}
	e, ok, err := s.src.Read(q.Get("agent"), q.Get("key"))
	if err != nil {
		replyErr(w, err)
		return
	}
	rep := ReadReply{Found: ok}
	if ok {
		rep.Entry = &e
	}
	reply(w, http.StatusOK, rep)
}

// live answers the live entries of the keys starting with prefix that the
// agent may read.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := board.CheckOutsideAuthor(q.Get("agent")); err != nil {
		replyErr(w, err)
		return
	}
	es, err := s.src.Live(q.Get("prefix"), q.Get("agent"))
	if err != nil {
		replyErr(w, err)
		return
	}
	reply(w, http.StatusOK, es)
}

// Live is the live entry of every key starting with prefix that agent may
// read, sorted by key.
func Live(b *board.Board, prefix, agent string) []board.Entry {
	keys := b.Keys(prefix)
	// Sized once: grown by append, the list of a run's 33,000 keys left
	// 14 MB of copies behind (`runner board FILE list`).
	out := make([]board.Entry, 0, len(keys))
	for _, k := range keys {
		if b.Allowed(agent, "read", k.Key) != nil {
			continue
		}
		if e, ok := b.Get(k.Key); ok {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) whole(w http.ResponseWriter, r *http.Request) {
	data, err := s.src.Encode()
	if err != nil {
		replyErr(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

// Filter selects the changes a watch streams.
type Filter struct {
	Prefix string // keys starting with it (entries without a key are left out)
	Topic  string // entries on this topic
	// After streams the entries after this seq; -1: only those written
	// from now on.
	After int64
}

func (f Filter) Match(e *board.Entry) bool {
	if f.Prefix != "" && (e.Key == "" || !strings.HasPrefix(e.Key, f.Prefix)) {
		return false
	}
	return f.Topic == "" || e.Topic == f.Topic
}

func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := Filter{Prefix: q.Get("prefix"), Topic: q.Get("topic"), After: -1}
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseInt(a, 10, 64)
		if err != nil {
			replyErr(w, fmt.Errorf("after=%q: not a number", a))
			return
		}
		f.After = n
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/jsonl")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	stop := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		close(stop)
	}()
	s.src.Stream(f, func(c Change) error {
		if err := enc.Encode(c); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	}, stop)
}

// stream streams a running step's answer as its model sends it: lines
// of AnswerChunk, until the visit asked for ends, or, for every visit of
// the label (no visit), until the run ends.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	label, visit := q.Get("label"), 0
	if label == "" {
		replyErr(w, errors.New("label=: which step's answer to stream"))
		return
	}
	if v := q.Get("visit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			replyErr(w, fmt.Errorf("visit=%q: want a visit number, 1 or more", v))
			return
		}
		visit = n
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/jsonl")
	w.WriteHeader(http.StatusOK)
	if fl != nil {
		fl.Flush()
	}
	enc := json.NewEncoder(w)
	stop := make(chan struct{})
	go func() {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		close(stop)
	}()
	s.answers.follow(label, visit, func(c AnswerChunk) error {
		if err := enc.Encode(c); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	}, stop)
}

// stream sends the board's changes that match f to send until a stop
// channel closes or send fails.
func stream(b *board.Board, f Filter, send func(Change) error, stops ...<-chan struct{}) error {
	last := f.After
	if last < 0 {
		last = int64(b.Len())
	}
	for {
		changed := b.Changed()
		for _, e := range b.Query(board.Filter{AfterSeq: last}) {
			last = e.Seq
			if f.Match(&e) {
				if err := send(ChangeOf(e)); err != nil {
					return err
				}
			}
		}
		for _, stop := range stops {
			select {
			case <-stop:
				return nil
			default:
			}
		}
		if err := waitAny(changed, stops); err != nil {
			return nil
		}
	}
}

var errStopped = errors.New("stopped")

func waitAny(changed <-chan struct{}, stops []<-chan struct{}) error {
	switch len(stops) {
	case 1:
		select {
		case <-changed:
		case <-stops[0]:
			return errStopped
		}
	case 2:
		select {
		case <-changed:
		case <-stops[0]:
			return errStopped
		case <-stops[1]:
			return errStopped
		}
	default:
		<-changed
	}
	return nil
}

// Change is one line of a watch: an entry as it was written.
type Change struct {
	Seq     int64          `json:"seq"`
	Op      string         `json:"op"` // put, delete, or append (an entry without a key)
	Key     string         `json:"key,omitempty"`
	Value   any            `json:"value"`
	Version int64          `json:"version,omitempty"`
	Author  string         `json:"author"`
	Topic   string         `json:"topic,omitempty"`
	Section string         `json:"section"`
	Label   string         `json:"label,omitempty"`
	TS      time.Time      `json:"ts"`
	TTL     *float64       `json:"ttl_s"`
	Meta    map[string]any `json:"meta,omitempty"`
}

// ChangeOf is the watch line of an entry.
func ChangeOf(e board.Entry) Change {
	op := "append"
	switch {
	case e.Deleted:
		op = "delete"
	case e.Key != "":
		op = "put"
	}
	return Change{Seq: e.Seq, Op: op, Key: e.Key, Value: e.Content, Version: e.Version, Author: e.Author,
		Topic: e.Topic, Section: e.Section, Label: e.Label, TS: e.TS, TTL: e.TTL, Meta: e.Meta}
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func replyErr(w http.ResponseWriter, err error) {
	kind, code := KindOf(err)
	reply(w, code, errorReply{Error: strings.TrimPrefix(err.Error(), "board: "), Kind: kind})
}

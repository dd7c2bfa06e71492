// Package web is the live web UI of `runner serve`: the runs saved under
// a directory, each run's page (the report of package report, kept current
// while the run goes), and answering the inputs a run waits at, from a
// browser, through the same code as `runner answer` (runs.OpenQuestion);
// and acting on runs: starting a plan found under the directory, stopping,
// resuming and forking a run, each as the CLI would in a process of its
// own (Options.Launch, Options.Resume).
//
// It is served by runner itself (its assets embedded), on the loopback
// address unless told otherwise. Every request for a page, a stream or an
// answer needs the token made for this start, as the header
// `Authorization: Bearer TOKEN`. It is never a cookie: a browser sends a
// host's cookies to every port of that host, so any other server on
// 127.0.0.1 would receive it. Given once in the URL that `runner serve`
// prints, the token moves to the URL's fragment (which the browser sends
// to no one); the page's script keeps it in this origin's localStorage,
// which no other port can read, and a page opened without the header
// comes back as a refusal whose script fetches it again with the header.
// A POST (an answer, a start, a stop, a resume, a fork) also needs the page's CSRF token (a header) and an Origin of
// this very server, and a Host header of the address served (so a
// rebinding DNS name cannot reach it). Everything shown is escaped by
// html/template; pages allow scripts from this origin only (the embedded
// scripts, served to anyone: they are the same in every runner binary
// and hold nothing of a run).
//
// Pages follow their run without a polling loop over runs: each open run
// page has one watcher (inotify on its run's directory, where the journal
// grows, or the live board's watch stream for a run on Temporal) that
// tells the page, through server-sent events, to fetch itself again.
//
// It may import the packages that read and answer runs (runs, board,
// liveboard, steps, agents, sys/...) and view/report; never cmd/.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

//go:embed assets
var assets embed.FS

// Options say what to serve and how.
type Options struct {
	// Dir is the directory whose runs are served (runs.RunsDir(Dir)).
	Dir string
	// Token is the secret every request needs ("": a random one).
	Token string
	// By is who answers, as the page's form first says.
	By string
	// Remote: the server listens on more than the loopback address, so
	// any Host header is taken (the token still guards every request).
	Remote bool
	// Resume starts a run again once an answer is recorded on its saved
	// file (nil: the page says how to resume it instead).
	Resume func(path string) error
	// Launch starts `runner ARGS...` in directory dir as a process of
	// its own, which goes on if the server stops: a run started from
	// the page, a fork (nil: the page starts and forks nothing).
	Launch func(dir string, args ...string) error
	// Log takes what the server does (zerolog; never the token).
	Log zerolog.Logger
	// Stderr takes the messages of a bridge to a run on Temporal.
	Stderr io.Writer
	// Throttle is the least time between two events to one page (0: 100ms).
	Throttle time.Duration
	// StreamWriteTimeout bounds each write of an event stream: a client
	// that takes none of it for this long is dropped (0:
	// DefaultStreamWriteTimeout).
	StreamWriteTimeout time.Duration
	// ReadTimeout bounds reading a request, its headers and its body
	// (0: DefaultReadTimeout).
	ReadTimeout time.Duration
	// People are per-person tokens (token -> name): each opens the
	// server as Token does, and says who answers.
	People map[string]string
	// UserHeader, when set, is a header a trusted proxy in front of the
	// server sets to the person's name on every request (and takes from
	// what clients send); "": none is trusted (the default).
	UserHeader string
	// Now reads the clock for single-use links' expiry (nil: time.Now).
	Now func() time.Time
}

// The default bounds of the waits on a browser (or anything that
// connects): a stream's write, a request's headers and body, a kept-alive
// connection left idle.
const (
	DefaultStreamWriteTimeout = 10 * time.Second
	DefaultReadTimeout        = 10 * time.Second
	idleTimeout               = 2 * time.Minute
	// streamQueue is the most an event stream's connection queues in the
	// kernel for its client (SO_SNDBUF; the kernel may double it): a few
	// hundred events, so a client that reads nothing fills it soon and
	// its write waits, rather than megabytes piling up first.
	streamQueue = 16 << 10
)

// connKey is the request context's key of its connection (HTTPServer).
type connKey struct{}

// Server is the web UI's handler.
type Server struct {
	opt   Options
	token string
	csrf  string
	mux   *http.ServeMux
}

// New makes a server with a fresh token unless o gives one.
func New(o Options) (*Server, error) {
	if o.Token == "" {
		b := make([]byte, 24)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		o.Token = hex.EncodeToString(b)
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Throttle == 0 {
		o.Throttle = 100 * time.Millisecond
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.StreamWriteTimeout <= 0 {
		o.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	// The CSRF token is derived from the secret, so a page can carry it
	// without carrying the secret itself.
	m := hmac.New(sha256.New, []byte(o.Token))
	m.Write([]byte("runner serve csrf"))
	s := &Server{opt: o, token: o.Token, csrf: hex.EncodeToString(m.Sum(nil)), mux: http.NewServeMux()}
	s.mux.HandleFunc("GET /{$}", s.list)
	s.mux.HandleFunc("GET /events", s.listEvents)
	s.mux.HandleFunc("GET /runs/{id}", s.runPage)
	s.mux.HandleFunc("GET /runs/{id}/events", s.runEvents)
	s.mux.HandleFunc("GET /runs/{id}/graph", s.graphPage)
	s.mux.HandleFunc("POST /runs/{id}/answer", s.answer)
	s.mux.HandleFunc("GET /plans", s.plansList)
	s.mux.HandleFunc("POST /runs", s.start)
	s.mux.HandleFunc("POST /runs/{id}/stop", s.stop)
	s.mux.HandleFunc("POST /runs/{id}/resume", s.resume)
	s.mux.HandleFunc("POST /runs/{id}/fork", s.fork)
	s.mux.HandleFunc("GET /once/{id}", s.oncePage)
	s.mux.HandleFunc("POST /once/{id}", s.onceAnswer)
	s.mux.Handle("GET /assets/", http.FileServerFS(assets))
	return s, nil
}

// HTTPServer is the http.Server to serve s with: every wait on a client
// is bounded (a request's headers and body, an idle connection; an event
// stream bounds each of its writes itself).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: s.opt.ReadTimeout, ReadTimeout: s.opt.ReadTimeout, IdleTimeout: idleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
}

// Token is the secret of this start, for the URL to print.
func (s *Server) Token() string { return s.token }

// URL is the address to open: base (http://host:port) with the token.
func (s *Server) URL(base string) string {
	return strings.TrimSuffix(base, "/") + "/?token=" + url.QueryEscape(s.token)
}

// ServeHTTP checks who asks, then serves.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if !s.opt.Remote && !loopbackHost(r.Host) {
		s.refuse(w, r, http.StatusMisdirectedRequest, "this server answers to a loopback address only (127.0.0.1, ::1, localhost), not "+r.Host)
		return
	}
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/assets/") {
		// The embedded scripts are the same in every runner binary and
		// hold nothing of a run; a page fetched by script loads them by
		// <script src>, which cannot carry the header.
		s.mux.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/once/") {
		// A single-use link: its own token, checked against the one
		// input it answers, is the credential (once.go).
		s.mux.ServeHTTP(w, r)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
		if !s.same(t, s.token) && s.person(t) == "" {
			s.refuse(w, r, http.StatusUnauthorized, "the token in the URL is not this server's: open the URL `runner serve` printed when it started")
			return
		}
		// The token moves to the fragment, which the browser sends to no
		// server; the page's script stores it for this origin and takes
		// it off the address bar.
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		w.Header().Set("Location", u.RequestURI()+"#token="+url.QueryEscape(t))
		w.WriteHeader(http.StatusSeeOther)
		return
	}
	if !s.authorized(r) {
		s.refuse(w, r, http.StatusUnauthorized, "this page needs the token of this server: open the URL `runner serve` printed when it started (it holds ?token=…)")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !s.same(r.Header.Get("X-Runner-CSRF"), s.csrf) {
			s.refuse(w, r, http.StatusForbidden, "refused: the request lacks this page's CSRF token (X-Runner-CSRF)")
			return
		}
		if o := r.Header.Get("Origin"); o == "" || !sameOrigin(o, r.Host) {
			s.refuse(w, r, http.StatusForbidden, "refused: the request comes from another origin ("+orNone(o)+"), not http://"+r.Host)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// authorized: the request carries this start's token as a bearer
// credential. Nothing else counts (no cookie, no query): a browser sends
// this header only where the page's own script sends it, to this origin.
func (s *Server) authorized(r *http.Request) bool {
	t, ok := bearer(r)
	return ok && (s.same(t, s.token) || s.person(t) != "")
}

func bearer(r *http.Request) (string, bool) {
	a := r.Header.Get("Authorization")
	if len(a) > len("Bearer ") && strings.EqualFold(a[:len("Bearer ")], "Bearer ") {
		return a[len("Bearer "):], true
	}
	return "", false
}

// person is the name of the person whose token t is, or "".
func (s *Server) person(t string) string {
	name := ""
	for tok, n := range s.opt.People {
		if s.same(t, tok) {
			name = n
		}
	}
	return name
}

// identity is who asks, as the server knows it for sure: the trusted
// proxy header, if one is configured, else the person whose token the
// request carries; "" when it does not know (the serve token is
// everyone's).
func (s *Server) identity(r *http.Request) string {
	if s.opt.UserHeader != "" {
		if v := strings.TrimSpace(r.Header.Get(s.opt.UserHeader)); v != "" {
			return v
		}
	}
	if t, ok := bearer(r); ok {
		return s.person(t)
	}
	return ""
}

func (s *Server) same(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func orNone(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}

// loopbackHost: the Host header names the loopback address.
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, host)
}

// refuse answers an error: as JSON to a script, else as a short page.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.opt.Log.Info().Int("status", code).Str("method", r.Method).Str("path", r.URL.Path).Msg(msg)
	if r.Method == http.MethodPost || strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, code, map[string]string{"error": msg})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	// A page refused for want of the token carries the script that
	// fetches it again with the token this origin keeps, if it keeps one.
	errorPage().Execute(w, map[string]any{"Msg": msg, "Boot": code == http.StatusUnauthorized})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// idPattern is what a run's directory may be called in a URL: a run id,
// never a path.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z_-]{0,127}$`) })

// runPath is the blackboard.json of the run named in the URL, or "" when
// there is no such run (or the name is not a run id).
func (s *Server) runPath(r *http.Request) string {
	id := r.PathValue("id")
	if !idPattern().MatchString(id) {
		return ""
	}
	p := filepath.Join(runs.RunsDir(s.opt.Dir), id, "blackboard.json")
	if exists(p) || exists(liveboard.RemotePath(p)) {
		return p
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

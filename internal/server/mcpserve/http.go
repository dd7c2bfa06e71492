package mcpserve

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewToken is a fresh bearer token: 32 random bytes, base64url. `runner
// mcp --http` makes one per start and prints it once.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Handler serves the server over MCP's streamable HTTP transport, to a
// client that sends `Authorization: Bearer TOKEN`. Every request without
// the token, or with another, is refused (401) before the MCP layer sees
// it. The token is compared in constant time, so its bytes cannot be
// guessed one by one from how long a refusal takes.
func (s *Server) Handler(token string) (http.Handler, error) {
	if len(token) < 16 {
		return nil, fmt.Errorf("the bearer token is %d characters: want 16 or more (mcpserve.NewToken makes one)", len(token))
	}
	// Events are kept (up to eventBytes a session) so that a client whose
	// stream broke resumes it (Last-Event-ID) without losing a message: an
	// elicitation of a run's input, a subscribed run's update.
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventBytes)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{EventStore: events})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="runner mcp"`)
			http.Error(w, "runner mcp: give the token runner mcp printed at its start as the header Authorization: Bearer TOKEN", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && r.Body != nil {
			moveHTTPTaskParams(r)
		}
		h.ServeHTTP(w, r)
	}), nil
}

// moveHTTPTaskParams moves a posted tools/call's task params into its
// _meta, as taskTransport does over stdio: the SDK's streamable handler
// makes its transports itself.
func moveHTTPTaskParams(r *http.Request) {
	orig := r.Body
	body, err := io.ReadAll(io.LimitReader(orig, maxTaskBody+1))
	if err != nil || len(body) > maxTaskBody {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), orig), orig}
		return
	}
	orig.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok || req.Method != "tools/call" {
		return
	}
	params, moved := moveTaskParams(req.Params)
	if !moved {
		return
	}
	req.Params = params
	if data, err := jsonrpc.EncodeMessage(req); err == nil {
		r.Body = io.NopCloser(bytes.NewReader(data))
		r.ContentLength = int64(len(data))
	}
}

// maxTaskBody bounds the request bodies looked into for task params;
// a larger one goes to the SDK as it came.
const maxTaskBody = 4 << 20

// eventBytes bounds the events kept for resumed streams.
const eventBytes = 4 << 20

// CheckAddr refuses an address to listen on that is not a loopback one
// (127.0.0.1, ::1, localhost), unless anyHost: the token is all that
// guards the server, and it goes in clear over plain HTTP.
func CheckAddr(addr string, anyHost bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: want HOST:PORT (127.0.0.1:8765) or :PORT: %v", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: the port %q is no number from 0 to 65535 (want HOST:PORT, 127.0.0.1:8765)", addr, port)
	} else if n == 0 && port != "0" {
		return fmt.Errorf("%q: the port %q: write it as 0", addr, port)
	}
	if anyHost {
		return nil
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("%q listens on every interface; give 127.0.0.1:PORT, or add --listen-any to mean it", addr)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%q is not a loopback address: the server would be reachable from other machines over plain HTTP; give 127.0.0.1:PORT, or add --listen-any to mean it", addr)
}

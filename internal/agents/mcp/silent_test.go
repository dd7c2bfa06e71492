package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// serveMute is a stdio MCP server that answers initialize and tools/list
// but never a call of its tool read_file (it ignores cancellation too).
// It writes its pid to $RUNNER_MCP_TEST_PID.
func serveMute() {
	os.WriteFile(os.Getenv("RUNNER_MCP_TEST_PID"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	s := sdk.NewServer(&sdk.Implementation{Name: "mute", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "read_file", Description: "Never answers."}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		select {}
	})
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
}

// TestSilentServerEndsWithinItsBound: a server that never answers, one
// that answers initialize but not tools/call, and an HTTP endpoint that
// accepts and stalls each end the wait within the bound the plan gave,
// with an error that names the server, what was awaited and the setting
// that bounds it; the server's process and the client's goroutines are
// gone after.
func TestSilentServerEndsWithinItsBound(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // reads the request, never answers
		<-r.Context().Done()
	}))
	defer stall.Close()
	const limit = 300 * time.Millisecond
	tests := []struct {
		name string
		srv  func(pidFile string) Server
		call bool // the wait is a tool call (else the start)
		want string
	}{
		{
			name: "stdio server that reads and never answers",
			srv: func(pidFile string) Server {
				return Server{Name: "files", Command: []string{"sh", "-c", "echo $$ >" + pidFile + "; cat >/dev/null"}}
			},
			want: `mcp server "files" (PEER): no answer to initialize within 300ms (agents.coder.mcp.files.start_timeout)`,
		},
		{
			name: "stdio server that answers initialize but not tools/call",
			srv: func(pidFile string) Server {
				return Server{Name: "files", Command: []string{exe}, Env: map[string]string{"RUNNER_MCP_TEST_SERVER": "mute", "RUNNER_MCP_TEST_PID": pidFile}}
			},
			call: true,
			want: `mcp server "files" (PEER): no answer to tools/call "read_file" within 300ms (agents.coder.mcp.files.call_timeout)`,
		},
		{
			name: "HTTP server that accepts and stalls",
			srv:  func(string) Server { return Server{Name: "web", URL: stall.URL + "/mcp"} },
			want: `mcp server "web" (` + stall.URL + `/mcp): no answer to initialize within 300ms (agents.coder.mcp.web.start_timeout)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			pidFile := filepath.Join(t.TempDir(), "pid")
			srv := tt.srv(pidFile)
			srv.StartTimeout, srv.CallTimeout = limit, limit
			if tt.call {
				// The wait under test is the call's: a loaded machine may
				// take longer than the call's bound to start a process.
				srv.StartTimeout = time.Minute
			}
			srv.Setting = "agents.coder.mcp." + srv.Name
			// The command holds a temporary path: its start stands for it.
			want := strings.ReplaceAll(tt.want, "PEER", srv.peer())
			if len(srv.Command) > 0 && !strings.HasPrefix(srv.peer(), srv.Command[0]) {
				t.Fatalf("peer %q does not start with the command", srv.peer())
			}
			began := time.Now()
			c, err := Start(context.Background(), srv, zerolog.Nop())
			if tt.call {
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.Call(context.Background(), "read_file", json.RawMessage(`{}`))
			}
			took := time.Since(began)
			if !errors.Is(err, ErrNoAnswer) || err.Error() != want {
				t.Fatalf("err = %v\nwant %s", err, want)
			}
			// Generous: the point is that it ends, not how fast.
			if took > limit+15*time.Second {
				t.Errorf("took %s with a bound of %s", took, limit)
			}
			if len(srv.Command) > 0 {
				b, err := os.ReadFile(pidFile)
				if err != nil {
					t.Fatal(err)
				}
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				for deadline := time.Now().Add(10 * time.Second); !gone(pid); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("server %d still running after the error", pid)
					}
				}
			}
			for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					buf := make([]byte, 1<<20)
					t.Fatalf("%d goroutines left (%d before):\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				}
			}
		})
	}
}

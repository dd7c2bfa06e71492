package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/planrunner/runner/internal/testutil/testtool"
	"github.com/rs/zerolog"
)

// The test binary is also a stdio MCP server (RUNNER_MCP_TEST_SERVER=1)
// that ignores SIGTERM, starts a child that would outlive it, and has a
// tool that makes it crash.
func TestMain(m *testing.M) {
	switch os.Getenv("RUNNER_MCP_TEST_SERVER") {
	case "1":
		serveStubborn()
		return
	case "mute":
		serveMute()
		return
	}
	os.Exit(m.Run())
}

func serveStubborn() {
	signal.Ignore(syscall.SIGTERM)
	child := exec.Command("sleep", "300")
	if err := child.Start(); err == nil {
		os.WriteFile(os.Getenv("RUNNER_MCP_TEST_CHILD"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
	}
	os.Stderr.WriteString("stubborn server up, token " + os.Getenv("TOKEN") + "\n")
	s := sdk.NewServer(&sdk.Implementation{Name: "stubborn", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "env", Description: "Says whether a variable is set."}, func(ctx context.Context, req *sdk.CallToolRequest, in struct {
		Name string `json:"name"`
	}) (*sdk.CallToolResult, any, error) {
		_, set := os.LookupEnv(in.Name)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strconv.FormatBool(set)}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "crash", Description: "Dies."}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		os.Stderr.WriteString("panic: out of cheese\n")
		os.Exit(3)
		return nil, nil, nil
	})
	// Keeps serving after stdin closes: only a signal it cannot ignore
	// ends it.
	_ = s.Run(context.Background(), &sdk.StdioTransport{})
	select {}
}

// gone reports whether pid has ended (gone, or a zombie nobody reaped).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

func startStubborn(t *testing.T, log zerolog.Logger) (*Conn, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	childFile := filepath.Join(t.TempDir(), "child.pid")
	t.Setenv("SECRET_OF_RUNNER", "x") // runner's environment, not the server's
	c, err := Start(context.Background(), Server{Name: "stub", Command: []string{exe},
		Env:  map[string]string{"RUNNER_MCP_TEST_SERVER": "1", "RUNNER_MCP_TEST_CHILD": childFile, "TOKEN": "tok-abcdef123456"},
		Mask: func(s string) string { return strings.ReplaceAll(s, "tok-abcdef123456", "***") }}, log)
	if err != nil {
		t.Fatal(err)
	}
	return c, childFile
}

// TestCloseEndsTheProcessGroup: a server that ignores SIGTERM, and the
// child it started, are both gone once Close returns; the server's
// stderr went to the log, masked.
func TestCloseEndsTheProcessGroup(t *testing.T) {
	var logs strings.Builder
	c, childFile := startStubborn(t, zerolog.New(&logs))
	tools, err := c.Tools(context.Background())
	if err != nil || len(tools) != 2 || tools[0].Name != "crash" || tools[1].Name != "env" {
		t.Fatalf("tools = %v, %v", tools, err)
	}
	res, err := c.Call(context.Background(), "env", json.RawMessage(`{"name":"SECRET_OF_RUNNER"}`))
	if err != nil || res.Text != "false" {
		t.Errorf("the server sees runner's environment: %v %v", res, err)
	}
	b, err := os.ReadFile(childFile)
	if err != nil {
		t.Fatal(err)
	}
	child, _ := strconv.Atoi(string(b))
	server := c.Pid()
	c.Close()
	// Close has sent SIGKILL to the group; the kernel ends both, only the
	// reaping of the reparented child may lag. The bound is not a speed
	// claim: without the group kill the child lives 300 s.
	for deadline := time.Now().Add(10 * time.Second); !gone(server) || !gone(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after Close: server %d gone %v, its child %d gone %v", server, gone(server), child, gone(child))
		}
	}
	if !strings.Contains(logs.String(), `"stderr":"stubborn server up, token ***"`) || strings.Contains(logs.String(), "tok-abcdef123456") {
		t.Errorf("logs = %s", logs.String())
	}
}

// TestCrashedServerIsAStepError: a server that dies in a call gives an
// error that says so (ErrServerGone), with the end of its stderr.
func TestCrashedServerIsAStepError(t *testing.T) {
	c, _ := startStubborn(t, zerolog.Nop())
	defer c.Close()
	_, err := c.Call(context.Background(), "crash", json.RawMessage(`{}`))
	if !errors.Is(err, ErrServerGone) || !strings.Contains(err.Error(), "stub calling crash") || !strings.Contains(err.Error(), "out of cheese") {
		t.Fatalf("err = %v", err)
	}
}

// TestReferenceServers drives the reference servers published on npm
// (installed by .ci/install): the filesystem server reads a file, the
// everything server echoes.
func TestReferenceServers(t *testing.T) {
	const how = "npm install --prefix DIR @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-everything@2026.8.31 and set RUNNER_TEST_NODE_MODULES=DIR/node_modules; .ci/install and .ci/run do"
	dir := testtool.FromEnv(t, "RUNNER_TEST_NODE_MODULES", "the MCP reference servers", how)
	node := testtool.LookPath(t, "node", ".ci/install installs it with apt-get (nodejs)")
	for _, tt := range []struct {
		pkg, tool, args, want string
		extra                 func(work string) []string
	}{
		{"server-filesystem", "read_text_file", `{"path":"%s/hello.txt"}`, "hello from the test", func(work string) []string { return []string{work} }},
		{"server-everything", "echo", `{"message":"ping"}`, "ping", func(string) []string { return []string{"stdio"} }},
	} {
		t.Run(tt.pkg, func(t *testing.T) {
			entry := filepath.Join(dir, "@modelcontextprotocol", tt.pkg, "dist", "index.js")
			testtool.Need(t, tt.pkg, fileExists(entry), "not in $RUNNER_TEST_NODE_MODULES="+dir+"; "+how)
			work := t.TempDir()
			os.WriteFile(filepath.Join(work, "hello.txt"), []byte("hello from the test\n"), 0o600)
			t.Setenv("HOME", t.TempDir())
			c, err := Start(context.Background(), Server{Name: "ref", Command: append([]string{node, entry}, tt.extra(work)...), Dir: work}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tools, err := c.Tools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, x := range tools {
				found = found || x.Name == tt.tool
			}
			if !found {
				t.Fatalf("no tool %s in %v", tt.tool, tools)
			}
			args := strings.Replace(tt.args, "%s", work, 1)
			res, err := c.Call(context.Background(), tt.tool, json.RawMessage(args))
			if err != nil || res.IsError || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("call = %+v, %v", res, err)
			}
		})
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

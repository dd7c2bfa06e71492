package mcpserve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/planrunner/runner/internal/server/mcpserve"
)

// TestUnknownResourceCodes: reading or subscribing to a resource that is
// not there answers with the protocol's resource-not-found code, never
// with code 0, which a client cannot tell from any other failure.
func TestUnknownResourceCodes(t *testing.T) {
	cs := connect(t, t.TempDir(), nil)
	tests := []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"read a run that is not there", func(ctx context.Context) error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runner://runs/nosuch"})
			return err
		}},
		{"read the board of a run that is not there", func(ctx context.Context) error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "runner://runs/nosuch/board"})
			return err
		}},
		// Subscribing is asked in the protocol version where the answer
		// comes back to the request (later ones answer it apart).
		{"subscribe to a run that is not there", func(ctx context.Context) error {
			return rawRequest(t, ctx, "resources/subscribe", `{"uri":"runner://runs/nosuch"}`)
		}},
		{"subscribe to a URI that is no resource", func(ctx context.Context) error {
			return rawRequest(t, ctx, "resources/subscribe", `{"uri":"file:///etc/passwd"}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := tt.do(ctx)
			var we *jsonrpc.Error
			// An unknown resource is invalid params, the code the MCP
			// specification now gives (-32002 before), never 0.
			if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("err = %#v (%v), want code %d", err, err, jsonrpc.CodeInvalidParams)
			}
		})
	}
}

// rawRequest starts a server, initializes a session at protocol version
// 2025-06-18 and sends it one request; it returns the error it answered.
func rawRequest(t *testing.T, ctx context.Context, method, params string) error {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	srv := mcpserve.New(mcpserve.Options{Dir: t.TempDir(), Runner: runnerBin, Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx, st) }()
	defer func() { cancel(); <-done }()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(text string) {
		msg, err := jsonrpc.DecodeMessage([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() *jsonrpc.Response {
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok {
				return r
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := answer(); r.Error != nil {
		t.Fatal(r.Error)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"` + method + `","params":` + params + `}`)
	return answer().Error
}

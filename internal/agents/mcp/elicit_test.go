package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// seatServer is an SDK server over streamable HTTP whose tool book asks
// a person which seat (elicitation/create) and says what it was told.
type seatServer struct {
	url  string
	mu   sync.Mutex
	told []string // the actions it got
}

func newSeatServer(t *testing.T) *seatServer {
	ss := &seatServer{}
	s := sdk.NewServer(&sdk.Implementation{Name: "seats", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "book", Description: "Books a seat."}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Which seat?", RequestedSchema: json.RawMessage(
			`{"type":"object","properties":{"seat":{"type":"string","enum":["a","b"]},"meal":{"type":"boolean","default":true}},"required":["seat"]}`)})
		if err != nil {
			return nil, nil, err
		}
		ss.mu.Lock()
		ss.told = append(ss.told, res.Action)
		ss.mu.Unlock()
		content, _ := json.Marshal(res.Content)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("booked %s %s", res.Action, content)}}}, nil, nil
	})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	ss.url = srv.URL
	return ss
}

// A server's elicitation during a tool call goes to the call's
// ElicitFunc: its answer goes back (defaults filled in for the fields a
// person left out); an ElicitFunc that stops the call tells the server
// cancel and the call returns its error; with none, nobody can answer:
// the server is told cancel and the tool's result says so.
func TestElicitationDuringACall(t *testing.T) {
	errStop := errors.New("ask later")
	cases := []struct {
		name    string
		elicit  ElicitFunc
		want    string // in the result
		wantErr error
		told    string
	}{
		{"accepted", func(_ context.Context, e Elicitation) (ElicitAnswer, error) {
			if e.Message != "Which seat?" || e.Tool != "book" || e.Server != "seats" || e.Mode != "form" || !strings.Contains(string(e.Schema), `"seat"`) {
				return ElicitAnswer{}, fmt.Errorf("asked %+v", e)
			}
			return ElicitAnswer{Action: "accept", Content: map[string]any{"seat": "b"}}, nil
		}, `booked accept {"meal":true,"seat":"b"}`, nil, "accept"},
		{"declined", func(context.Context, Elicitation) (ElicitAnswer, error) {
			return ElicitAnswer{Action: "decline"}, nil
		}, "booked decline null", nil, "decline"},
		{"stopped", func(context.Context, Elicitation) (ElicitAnswer, error) {
			return ElicitAnswer{}, errStop
		}, "", errStop, ""},
		{"nobody", nil, `booked cancel null
[runner: the server asked a person "Which seat?" and nobody can answer here: runner told it cancel]`, nil, "cancel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := newSeatServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := Start(ctx, Server{Name: "seats", URL: ss.url, CallTimeout: 20 * time.Second}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			res, err := conn.CallElicit(ctx, "book", json.RawMessage(`{}`), c.elicit)
			if c.wantErr != nil {
				if !errors.Is(err, ErrCallStopped) || !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want one that wraps ErrCallStopped and %v", err, c.wantErr)
				}
			} else if err != nil || res.Text != c.want {
				t.Fatalf("result %q, %v; want %q", res.Text, err, c.want)
			}
			if c.wantErr != nil {
				return // the call is cancelled: what its tool hears first is not the client's to say
			}
			// The server hears the answer.
			deadline := time.Now().Add(10 * time.Second)
			for {
				ss.mu.Lock()
				told := strings.Join(ss.told, ",")
				ss.mu.Unlock()
				if told == c.told {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the server was told %q, want %q", told, c.told)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

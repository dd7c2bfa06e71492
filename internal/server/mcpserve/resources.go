package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// The resources: the list of runs, each run (its status, as run_status
// gives it) and each run's board (as run_report gives it). A client may
// subscribe to a run or a board: it is told each time the run's files
// change (a step finishes, a key is written, the run ends).
const (
	runsURI       = "runner://runs"
	runPrefix     = "runner://runs/"
	boardSuffix   = "/board"
	runTemplate   = "runner://runs/{id}"
	boardTemplate = "runner://runs/{id}/board"
)

// watchEvery is how often a subscribed run's files are looked at: a stat
// of three files, cheap enough to do often, and soon enough for a person
// watching.
const watchEvery = 200 * time.Millisecond

func (s *Server) addResources() {
	s.mcp.AddResource(&mcp.Resource{URI: runsURI, Name: "runs", Title: "Runs",
		Description: "The runs saved under the server's directory (list_runs as a resource).", MIMEType: "application/json"}, s.readRuns)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: runTemplate, Name: "run", Title: "A run",
		Description: "A run's status, steps and questions (run_status as a resource); subscribe to follow it. id: a run id, a unique prefix, or latest.",
		MIMEType:    "application/json"}, s.readRun)
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: boardTemplate, Name: "board", Title: "A run's board",
		Description: "A run's blackboard as markdown (run_report as a resource); subscribe to be told of each change.",
		MIMEType:    "text/markdown"}, s.readBoard)
}

// runOfURI is the run a resource URI names, and whether it is its board.
func runOfURI(uri string) (id string, isBoard bool, ok bool) {
	rest, ok := strings.CutPrefix(uri, runPrefix)
	if !ok {
		return "", false, false
	}
	rest, isBoard = strings.CutSuffix(rest, boardSuffix)
	if rest == "" || strings.Contains(rest, "/") {
		return "", false, false
	}
	return rest, isBoard, true
}

func (s *Server) readRuns(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	_, out, err := s.listRuns(ctx, nil, ListInput{})
	if err != nil {
		return nil, internalError(err)
	}
	return jsonContents(req.Params.URI, out)
}

func (s *Server) readRun(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, isBoard, ok := runOfURI(req.Params.URI)
	if !ok || isBoard {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if _, err := s.resolve(id); err != nil {
		return nil, notFound(req.Params.URI, err)
	}
	_, out, err := s.runStatus(ctx, nil, RunInput{Run: id})
	if err != nil {
		return nil, internalError(err)
	}
	return jsonContents(req.Params.URI, out)
}

func (s *Server) readBoard(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, isBoard, ok := runOfURI(req.Params.URI)
	if !ok || !isBoard {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	if _, err := s.resolve(id); err != nil {
		return nil, notFound(req.Params.URI, err)
	}
	text, err := s.reportText(id)
	if err != nil {
		return nil, internalError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: text}}}, nil
}

// notFound is the SDK's "resource not found", saying why.
func notFound(uri string, why error) error {
	err := mcp.ResourceNotFoundError(uri)
	return fmt.Errorf("%w: %v", err, why)
}

// internalError is a failure of the server's own (a run it cannot
// read), with JSON-RPC's internal-error code rather than none.
func internalError(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

func jsonContents(uri string, v any) (*mcp.ReadResourceResult, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, internalError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}

// watch follows one subscribed resource: every watchEvery it looks at the
// run's files (blackboard.json, its journal, a Temporal run's record) and
// tells the subscribers when any changed.
type watch struct {
	subscribers int
	stop        context.CancelFunc
}

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	if uri == runsURI {
		return s.startWatch(uri, "")
	}
	id, _, ok := runOfURI(uri)
	if !ok {
		return notFound(uri, fmt.Errorf("subscribe to %s, %s or %s", runsURI, runTemplate, boardTemplate))
	}
	path, err := s.resolve(id)
	if err != nil {
		return notFound(uri, err)
	}
	return s.startWatch(uri, path)
}

// startWatch starts the watcher of uri (path: the run's board; "": the
// list of runs), or counts one more subscriber of it.
func (s *Server) startWatch(uri, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return internalError(errors.New("the server is closing"))
	}
	if w := s.watches[uri]; w != nil {
		w.subscribers++
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.watches[uri] = &watch{subscribers: 1, stop: cancel}
	files := []string{path, board.JournalPath(path), liveboard.RemotePath(path)}
	if path == "" {
		files = []string{runsDirOf(s.o.Dir)}
	}
	// The first look is taken before the subscribe is answered: a change
	// the subscriber makes right after it must not be taken for the
	// starting state.
	last := fingerprint(files)
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if now := fingerprint(files); now != last {
				last = now
				s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
			}
		}
	}()
	return nil
}

func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w := s.watches[req.Params.URI]; w != nil {
		if w.subscribers--; w.subscribers <= 0 {
			w.stop()
			delete(s.watches, req.Params.URI)
		}
	}
	return nil
}

// fingerprint is the identity, size and time of each file (a directory:
// and the number of its entries), which change with every write: an
// atomic write replaces the file, so its inode changes even when its size
// and time (to the file system's granularity) do not.
func fingerprint(files []string) string {
	var b strings.Builder
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			b.WriteString("-;")
			continue
		}
		fmt.Fprintf(&b, "%d/%d/%d;", inode(fi), fi.Size(), fi.ModTime().UnixNano())
		if fi.IsDir() {
			ents, _ := os.ReadDir(f)
			fmt.Fprintf(&b, "%d;", len(ents))
		}
	}
	return b.String()
}

func ttlDuration(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// runsDirOf is where the runs of dir are (runs.RunsDir), watched for runs
// coming and going.
func runsDirOf(dir string) string { return runs.RunsDir(dir) }

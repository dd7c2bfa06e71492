// Package otelcoltest starts the OpenTelemetry Collector for a test: a
// real OTLP receiver nobody here wrote, built by .ci/install from
// .ci/otelcol-builder.yaml (the otlp receiver and the file exporter), so
// tests assert on what a collector decoded from runner's export rather
// than on what runner meant to send.
//
// The collector is $RUNNER_OTELCOL_BIN (.ci/run exports it); without it a
// test skips, and fails under CI=true (internal/testtool).
package otelcoltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/testutil/testtool"
)

// EnvBin names the collector binary.
const EnvBin = "RUNNER_OTELCOL_BIN"

// Collector is a running collector: OTLP/HTTP on Endpoint, what it
// received written by its file exporter to File as OTLP JSON lines.
type Collector struct {
	Endpoint string // http://127.0.0.1:PORT, for --otlp-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT
	File     string
	log      string
}

// Start starts a collector on a free port, for the test's life.
func Start(t testing.TB) *Collector {
	t.Helper()
	const how = "bash .ci/install builds it (the OpenTelemetry Collector Builder with .ci/otelcol-builder.yaml) into $RUNNER_CI_TOOLS/bin/otelcol, and .ci/run sets " + EnvBin
	if os.Getenv(EnvBin) == "" {
		testtool.Missing(t, "the OpenTelemetry Collector ("+EnvBin+")", how)
	}
	bin := testtool.FromEnv(t, EnvBin, "the OpenTelemetry Collector", how)
	dir := t.TempDir()
	port := freePort(t)
	c := &Collector{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), File: filepath.Join(dir, "traces.json"),
		log: filepath.Join(dir, "otelcol.log")}
	// Its own metrics are off: they would listen on a fixed port (8888)
	// that two collectors of parallel tests would fight over.
	config := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http: {endpoint: "127.0.0.1:%d"}
exporters:
  file:
    path: %q
    format: json
    flush_interval: 50ms
service:
  pipelines:
    traces: {receivers: [otlp], exporters: [file]}
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
`, port, c.File)
	cfg := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(c.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	})
	// Ready when its receiver accepts connections.
	for deadline := time.Now().Add(60 * time.Second); ; {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			conn.Close()
			return c
		}
		select {
		case <-exited:
			t.Fatalf("the collector exited: %s", c.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not listen on %d in 60s: %s", port, c.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log is what the collector printed.
func (c *Collector) Log() string {
	b, _ := os.ReadFile(c.log)
	return string(b)
}

// Raw is all the collector wrote to its file.
func (c *Collector) Raw(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(c.File)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// Span is a span as the collector received it.
type Span struct {
	TraceID, ID, Parent string
	Name                string
	Kind                int // OTLP's enum: 1 internal, 3 client
	Start, End          time.Time
	Attrs               map[string]any // string, int64, float64, bool, or []any of those
	StatusCode          int            // 0 unset, 1 ok, 2 error
	StatusMessage       string
	Service             string // the resource's service.name
}

// Spans waits until the collector has written want spans of the trace
// whose run span has runner.run.id = runID (its exporter writes a moment
// after the receiver answered), and returns them.
func (c *Collector) Spans(t testing.TB, runID string, want int) []Span {
	t.Helper()
	var got []Span
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		all, err := Parse([]byte(c.Raw(t)))
		if err != nil {
			continue // a line half written: read again
		}
		got = ofRun(all, runID)
		if len(got) >= want {
			return got
		}
	}
	t.Fatalf("the collector has %d spans of run %s, want %d; log:\n%s", len(got), runID, want, c.Log())
	return nil
}

// ofRun is the spans of the trace of run id.
func ofRun(all []Span, id string) []Span {
	trace := ""
	for _, s := range all {
		if s.Attrs["runner.run.id"] == id && s.Parent == "" {
			trace = s.TraceID
		}
	}
	var out []Span
	for _, s := range all {
		if trace != "" && s.TraceID == trace {
			out = append(out, s)
		}
	}
	return out
}

// Parse reads the collector's OTLP JSON lines (one ExportTraceServiceRequest
// a line, as its file exporter writes them).
func Parse(data []byte) ([]Span, error) {
	var out []Span
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var req struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []kv `json:"attributes"`
				} `json:"resource"`
				ScopeSpans []struct {
					Spans []struct {
						TraceID      string `json:"traceId"`
						SpanID       string `json:"spanId"`
						ParentSpanID string `json:"parentSpanId"`
						Name         string `json:"name"`
						Kind         int    `json:"kind"`
						Start        string `json:"startTimeUnixNano"`
						End          string `json:"endTimeUnixNano"`
						Attributes   []kv   `json:"attributes"`
						Status       struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, err
		}
		for _, rs := range req.ResourceSpans {
			service, _ := attrs(rs.Resource.Attributes)["service.name"].(string)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, Span{TraceID: s.TraceID, ID: s.SpanID, Parent: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						Start: nanos(s.Start), End: nanos(s.End), Attrs: attrs(s.Attributes),
						StatusCode: s.Status.Code, StatusMessage: s.Status.Message, Service: service})
				}
			}
		}
	}
	return out, sc.Err()
}

type kv struct {
	Key   string `json:"key"`
	Value value  `json:"value"`
}

// value is OTLP JSON's AnyValue (int64 as a string, as protobuf's JSON
// mapping writes it).
type value struct {
	String *string  `json:"stringValue"`
	Int    *string  `json:"intValue"`
	Double *float64 `json:"doubleValue"`
	Bool   *bool    `json:"boolValue"`
	Array  *struct {
		Values []value `json:"values"`
	} `json:"arrayValue"`
}

func (v value) get() any {
	switch {
	case v.String != nil:
		return *v.String
	case v.Int != nil:
		n, _ := strconv.ParseInt(*v.Int, 10, 64)
		return n
	case v.Double != nil:
		return *v.Double
	case v.Bool != nil:
		return *v.Bool
	case v.Array != nil:
		var out []any
		for _, x := range v.Array.Values {
			out = append(out, x.get())
		}
		return out
	}
	return nil
}

func attrs(kvs []kv) map[string]any {
	m := map[string]any{}
	for _, a := range kvs {
		m[a.Key] = a.Value.get()
	}
	return m
}

func nanos(s string) time.Time {
	n, _ := strconv.ParseInt(s, 10, 64)
	return time.Unix(0, n)
}

// Tree is the span tree without times and IDs: one line a span, its
// path of names from the root, kind, status and attributes (less those
// in skip), sorted. Two traces of the same run made by different
// engines must have the same tree.
func Tree(spans []Span, skip ...string) []string {
	byID := map[string]Span{}
	for _, s := range spans {
		byID[s.ID] = s
	}
	path := func(s Span) string {
		p := s.Name
		for seen := 0; s.Parent != "" && seen < len(spans); seen++ {
			s = byID[s.Parent]
			p = s.Name + " > " + p
		}
		return p
	}
	drop := map[string]bool{}
	for _, k := range skip {
		drop[k] = true
	}
	var out []string
	for _, s := range spans {
		var keys []string
		for k := range s.Attrs {
			if !drop[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var b strings.Builder
		fmt.Fprintf(&b, "%s [kind %d, status %d %q]", path(s), s.Kind, s.StatusCode, s.StatusMessage)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%v", k, s.Attrs[k])
		}
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

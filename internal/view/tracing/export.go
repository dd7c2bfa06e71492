package tracing

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/sys/safefs"
	"github.com/planrunner/runner/internal/view/traceconf"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// DefaultTimeout bounds a whole export.
const DefaultTimeout = traceconf.DefaultTimeout

// batch is how many spans go in one request.
const batch = 512

// The protocol variables: runner-otel speaks http/protobuf only.
const (
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Config says where a run's trace goes.
type Config struct {
	// Endpoint is the OTLP/HTTP endpoint given on the command line; ""
	// leaves it to OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT.
	Endpoint string
	// File, when set, is where to write the trace as OTLP JSON instead
	// ("-": to Stdout).
	File   string
	Stdout io.Writer
	// Timeout bounds the export; 0: DefaultTimeout.
	Timeout time.Duration
	Options
}

// Export sends the board's trace where c says: as OTLP JSON to c.File, or
// over OTLP/HTTP. It gives up after the timeout; an error says why,
// never stops anything.
func Export(ctx context.Context, bd *board.Board, c Config) (int, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var exp sdktrace.SpanExporter
	var err error
	if c.File != "" {
		exp, err = otlptrace.New(ctx, &fileClient{path: c.File, stdout: c.Stdout})
	} else {
		exp, err = httpExporter(ctx, c.Endpoint, timeout)
	}
	if err != nil {
		return 0, err
	}
	n, err := Write(ctx, bd, exp, c.Options)
	if serr := exp.Shutdown(ctx); err == nil && serr != nil {
		err = serr
	}
	if err != nil && c.File == "" {
		return n, fmt.Errorf("exporting the trace to %s: %w", describeEndpoint(c.Endpoint), err)
	}
	return n, err
}

// describeEndpoint says where an export went, for its error.
func describeEndpoint(flag string) string {
	for _, e := range []string{flag, os.Getenv(traceconf.EnvTracesEndpoint), os.Getenv(traceconf.EnvEndpoint)} {
		if e != "" {
			return e
		}
	}
	return "the OTLP endpoint"
}

// httpExporter is an OTLP/HTTP exporter configured by the environment
// (OTEL_EXPORTER_OTLP_*), with the endpoint given on the command line if
// any. Its retries stop within the timeout.
func httpExporter(ctx context.Context, endpoint string, timeout time.Duration) (sdktrace.SpanExporter, error) {
	for _, e := range []string{envTracesProtocol, envProtocol} {
		p := os.Getenv(e)
		if p == "" {
			continue
		}
		if p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: runner exports traces over http/protobuf only (set it to http/protobuf or unset it)", e, p)
		}
		break
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithTimeout(timeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 200 * time.Millisecond,
			MaxInterval: time.Second, MaxElapsedTime: timeout}),
	}
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	}
	return otlptracehttp.New(ctx, opts...)
}

// Write makes the board's spans and hands them to exp, in batches. It
// returns how many spans it made.
func Write(ctx context.Context, bd *board.Board, exp sdktrace.SpanExporter, o Options) (int, error) {
	run := bd.Run()
	if run.ID == "" {
		return 0, errors.New("the board has no run to trace")
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "runner"),
			attribute.String("service.version", run.RunnerVersion)),
		resource.WithFromEnv()) // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	if err != nil {
		return 0, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	col := &collector{}
	seed := idSeed(run)
	tid := traceID(seed)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(col), sdktrace.WithIDGenerator(ids{trace: tid}),
		sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeValueLengthLimit: -1, AttributeCountLimit: -1,
			EventCountLimit: -1, LinkCountLimit: -1, AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1}))
	b := &builder{tracer: tp.Tracer("github.com/planrunner/runner/internal/view/tracing"), o: o, runID: seed, trace: tid}
	b.emit(b.spans(bd))
	if err := tp.Shutdown(ctx); err != nil {
		return 0, err
	}
	spans := col.spans
	for len(spans) > 0 {
		n := min(batch, len(spans))
		if err := exp.ExportSpans(ctx, spans[:n]); err != nil {
			return len(col.spans), err
		}
		spans = spans[n:]
	}
	return len(col.spans), nil
}

// collector keeps the finished spans, to be sent in a few requests.
type collector struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
}

func (c *collector) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	c.mu.Lock()
	c.spans = append(c.spans, spans...)
	c.mu.Unlock()
	return nil
}

func (c *collector) Shutdown(context.Context) error { return nil }

// fileClient writes the trace as OTLP JSON: one ExportTraceServiceRequest
// a line, the form the Collector's file exporter and otlpjsonfilereceiver
// use. The file appears whole or not at all (a temp file renamed).
type fileClient struct {
	path   string
	stdout io.Writer
	reqs   [][]byte
}

func (f *fileClient) Start(context.Context) error { return nil }

func (f *fileClient) UploadTraces(_ context.Context, spans []*tracepb.ResourceSpans) error {
	out, err := otlpJSON(&coltracepb.ExportTraceServiceRequest{ResourceSpans: spans})
	if err != nil {
		return err
	}
	f.reqs = append(f.reqs, out)
	return nil
}

// otlpJSON is the request in OTLP's JSON encoding, which differs from
// protobuf's standard JSON mapping in two ways: enums are numbers, and
// trace and span IDs are hex, not base64.
func otlpJSON(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	out, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, err
	}
	if err := hexIDs(v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// hexIDs rewrites every traceId, spanId and parentSpanId in v from
// base64 to hex.
func hexIDs(v any) error {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
				raw, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q: %w", k, s, err)
				}
				v[k] = hex.EncodeToString(raw)
				continue
			}
			if err := hexIDs(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := hexIDs(x); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *fileClient) Stop(context.Context) error {
	if f.path == "-" {
		return writeLines(f.stdout, f.reqs)
	}
	return safefs.WriteOutput(f.path, 0o600, func(w io.Writer) error { return writeLines(w, f.reqs) })
}

func writeLines(w io.Writer, lines [][]byte) error {
	for _, l := range lines {
		if _, err := w.Write(append(l, '\n')); err != nil {
			return err
		}
	}
	return nil
}

package boot

import (
	"bytes"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/liveboard"
	"github.com/rs/zerolog"
)

// runner hands a connection to runner-temporal as flags (Conn.Args):
// what runner-temporal parses from them is the connection runner had.
func TestConnArgsParseBackToTheSameConn(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", "")
	t.Setenv("TEMPORAL_NAMESPACE", "")
	t.Setenv("RUNNER_TEMPORAL_STORE", "")
	t.Setenv("RUNNER_TEMPORAL_S3_ENDPOINT", "")
	t.Setenv("RUNNER_TEMPORAL_S3_PATH_STYLE", "")
	for _, tc := range []struct {
		name string
		c    Conn
	}{
		{"address only", Conn{HostPort: "h:7233", Namespace: "default", TaskQueue: DefaultTaskQueue}},
		{"a directory store", Conn{HostPort: "h:1", Namespace: "ns", TaskQueue: "q", Store: Store{Spec: "/srv/blobs"}}},
		{"S3 and mutual TLS", Conn{HostPort: "h:1", Namespace: "ns", TaskQueue: "q",
			Store:    Store{Spec: "s3://b/p", S3Endpoint: "http://minio:9000", S3Region: "eu", S3PathStyle: true},
			Security: liveboard.Security{TLS: "true", CertPath: "c.pem", KeyPath: "k.pem", CAPath: "ca.pem", ServerName: "t.example", APIKeyFile: "key"}}},
		{"bounds of the waits", Conn{HostPort: "h:1", Namespace: "ns", TaskQueue: "q", DialTimeout: 3 * time.Second,
			Store: Store{Spec: "s3://b/p", Timeout: 90 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var got Conn
			ConnFlags(fs, &got)
			if err := fs.Parse(tc.c.Args()); err != nil {
				t.Fatalf("%q: %v", tc.c.Args(), err)
			}
			if !reflect.DeepEqual(got, tc.c) {
				t.Errorf("%q parsed as\n%+v\nwant\n%+v", tc.c.Args(), got, tc.c)
			}
		})
	}
}

// The flags' help is the same on every machine (the docs print it): no
// default that is a path of this user.
func TestFlagHelpNamesNoLocalPath(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/nowhere/cache")
	t.Setenv("HOME", "/nowhere/home")
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var w Worker
	WorkerFlags(fs, &w)
	fs.VisitAll(func(f *flag.Flag) {
		if strings.Contains(f.Usage+f.DefValue, "/nowhere") {
			t.Errorf("--%s: help %q, default %q names this machine's cache", f.Name, f.Usage, f.DefValue)
		}
	})
	if got, want := w.Root(), "/nowhere/cache/runner-temporal/work"; got != want {
		t.Errorf("work root %q, want %q", got, want)
	}
}

func TestLogger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		l       Log
		def     string
		wantErr string
		info    bool // an info event is written
		json    bool
	}{
		{"default console", Log{}, "console", "", true, false},
		{"default json", Log{}, "json", "", true, true},
		{"json asked", Log{Format: "json"}, "console", "", true, true},
		{"quiet", Log{Quiet: true}, "json", "", false, true},
		{"warn", Log{Level: "WARN"}, "json", "", false, true},
		{"debug", Log{Level: "debug"}, "json", "", true, true},
		{"bad format", Log{Format: "xml"}, "json", `--log-format "xml"`, false, false},
		{"bad level", Log{Level: "loud"}, "json", `--log-level "loud"`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			log, err := tc.l.Logger(&b, tc.def)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Msg("hello")
			if got := strings.Contains(b.String(), "hello"); got != tc.info {
				t.Errorf("info written: %v, want %v (%q)", got, tc.info, b.String())
			}
			if tc.info && strings.HasPrefix(b.String(), "{") != tc.json {
				t.Errorf("json: %q", b.String())
			}
		})
	}
	if l, _ := ParseLevel("debug", true, zerolog.InfoLevel); l != zerolog.ErrorLevel {
		t.Errorf("-q with --log-level debug: %v, want error", l)
	}
}

package boot

import (
	"cmp"
	"flag"
	"os"
	"path/filepath"
	"time"

	"github.com/planrunner/runner/internal/liveboard"
)

// DefaultTaskQueue is the task queue workers poll and runs go to when
// none is named.
const DefaultTaskQueue = "runner"

// DefaultStoreDir is the store when none is named: a directory in the
// user's cache, which only workers and clients of one host share.
func DefaultStoreDir() string { return cacheDir("blobs") }

// DefaultWorkRoot is where a worker makes the workspaces of the runs
// pinned to it when --work-root is not given.
func DefaultWorkRoot() string { return cacheDir("work") }

func cacheDir(name string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "runner-temporal", name)
}

// The default bounds of the waits on Temporal and the store: reaching the
// Temporal server (a dial and its first call), and one request to an S3
// store.
const (
	DefaultDialTimeout  = 10 * time.Second
	DefaultStoreTimeout = 2 * time.Minute
)

// Conn is how a command reaches Temporal and the store its runs share:
// what the connection flags say.
type Conn struct {
	HostPort, Namespace, TaskQueue string
	Security                       liveboard.Security
	Store                          Store
	// DialTimeout bounds reaching the Temporal server
	// (--temporal-dial-timeout; 0: DefaultDialTimeout).
	DialTimeout time.Duration
}

// Store names the content-addressed store the board and large payloads
// go through.
type Store struct {
	Spec        string // a directory, or s3://BUCKET[/PREFIX][?...]
	S3Endpoint  string
	S3Region    string
	S3PathStyle bool
	// Timeout bounds one request to an S3 store (--store-timeout; 0:
	// DefaultStoreTimeout).
	Timeout time.Duration
}

// ConnFlags defines on fs the flags of every command that dials Temporal,
// into c. Unset, the address, namespace and TLS options come from the
// Temporal CLI's environment variables (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_TLS_*; the TLS ones when the connection
// is made), the API key from TEMPORAL_API_KEY or --api-key-file.
func ConnFlags(fs *flag.FlagSet, c *Conn) {
	fs.StringVar(&c.HostPort, "temporal", os.Getenv("TEMPORAL_ADDRESS"), "the Temporal frontend, `HOST:PORT` (required; default $TEMPORAL_ADDRESS)")
	fs.StringVar(&c.Namespace, "namespace", cmp.Or(os.Getenv("TEMPORAL_NAMESPACE"), "default"), "the Temporal namespace (default $TEMPORAL_NAMESPACE, else default)")
	fs.StringVar(&c.TaskQueue, "task-queue", DefaultTaskQueue, "the task queue workers poll and runs go to")
	fs.DurationVar(&c.DialTimeout, "temporal-dial-timeout", 0, "give up reaching the Temporal server (connecting and its first answer) after this long (default 10s)")
	SecurityFlags(fs, &c.Security)
	StoreFlags(fs, &c.Store)
}

// SecurityFlags defines on fs the flags that reach a secured Temporal
// cluster (see liveboard.Security), into s.
func SecurityFlags(fs *flag.FlagSet, s *liveboard.Security) {
	fs.StringVar(&s.TLS, "tls", "", "true or false: connect with TLS (default: on when any --tls-* option or an API key is given)")
	fs.StringVar(&s.CertPath, "tls-cert", "", "mutual TLS: the client certificate (PEM); with --tls-key")
	fs.StringVar(&s.KeyPath, "tls-key", "", "mutual TLS: the client certificate's private key (PEM)")
	fs.StringVar(&s.CAPath, "tls-ca", "", "the CA certificate (PEM) the server's certificate is checked against (default: the system's roots)")
	fs.StringVar(&s.ServerName, "tls-server-name", "", "the name the server's certificate must hold (default: the host of --temporal)")
	fs.StringVar(&s.APIKeyFile, "api-key-file", "", "a file whose first line is the API key (Temporal Cloud); default $TEMPORAL_API_KEY. Never on the command line: ps shows it")
}

// StoreFlags defines on fs the flags that name the store, into s: one
// value, a directory or s3://BUCKET/PREFIX, under three names (--blobs
// is the first one, which runner passes on), and the S3 options.
func StoreFlags(fs *flag.FlagSet, s *Store) {
	help := "the content-addressed store the board and large payloads go through: a directory, or s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true] (credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the shared credentials file); every worker and client of a run must share it (default $RUNNER_TEMPORAL_STORE, else runner-temporal/blobs in the user's cache directory)"
	s.Spec = os.Getenv("RUNNER_TEMPORAL_STORE")
	fs.StringVar(&s.Spec, "store", s.Spec, help)
	fs.StringVar(&s.Spec, "store-dir", s.Spec, "the store as a directory (same as --store DIR)")
	fs.StringVar(&s.Spec, "blobs", s.Spec, "same as --store")
	fs.StringVar(&s.S3Endpoint, "s3-endpoint", os.Getenv("RUNNER_TEMPORAL_S3_ENDPOINT"), "with an s3:// store: the server, http(s)://HOST[:PORT] (default $RUNNER_TEMPORAL_S3_ENDPOINT, $AWS_ENDPOINT_URL_S3, else AWS)")
	fs.StringVar(&s.S3Region, "s3-region", "", "with an s3:// store: the region (default $AWS_REGION)")
	fs.DurationVar(&s.Timeout, "store-timeout", 0, "with an s3:// store: give up one request to it (a blob's write or read) left unanswered this long (default 2m)")
	fs.BoolVar(&s.S3PathStyle, "s3-path-style", os.Getenv("RUNNER_TEMPORAL_S3_PATH_STYLE") == "true", "with an s3:// store: address the bucket as HOST/BUCKET (most self-hosted servers; default $RUNNER_TEMPORAL_S3_PATH_STYLE)")
}

// Args are c as the flags ConnFlags defines, for a command handing the
// connection on to runner-temporal; unset fields are left out.
func (c Conn) Args() []string {
	var args []string
	for _, f := range [][2]string{{"--temporal", c.HostPort}, {"--namespace", c.Namespace}, {"--task-queue", c.TaskQueue},
		{"--blobs", c.Store.Spec}, {"--s3-endpoint", c.Store.S3Endpoint}, {"--s3-region", c.Store.S3Region}} {
		if f[1] != "" {
			args = append(args, f[0], f[1])
		}
	}
	if c.Store.S3PathStyle {
		args = append(args, "--s3-path-style")
	}
	if c.DialTimeout > 0 {
		args = append(args, "--temporal-dial-timeout", c.DialTimeout.String())
	}
	if c.Store.Timeout > 0 {
		args = append(args, "--store-timeout", c.Store.Timeout.String())
	}
	return append(args, c.Security.Args()...)
}

// Worker is what the flags of `runner worker` (runner-temporal worker)
// say.
type Worker struct {
	Conn
	Log
	Workdir, HostID, WorkRoot string
	SharedWorkspace           bool
	Heartbeat                 time.Duration
	MaxSteps                  int
	Health                    string
	ExpectStoreID             string
}

// Root is --work-root, else DefaultWorkRoot.
func (w Worker) Root() string {
	if w.WorkRoot != "" {
		return w.WorkRoot
	}
	return DefaultWorkRoot()
}

// WorkerFlags defines every flag of the worker on fs, into w: runner
// lists them for `runner worker --help` and runner-temporal parses them.
func WorkerFlags(fs *flag.FlagSet, w *Worker) {
	ConnFlags(fs, &w.Conn)
	w.Log.Flags(fs)
	fs.StringVar(&w.Workdir, "workdir", "", "with --shared-workspace: run steps here (default: the run's workdir, which must exist on this host)")
	fs.StringVar(&w.HostID, "host-id", "", "this worker's host, whose task queue (QUEUE@HOST) takes the steps of runs pinned here; give a stable one to keep them across a restart (default: the host name and a random suffix)")
	// The default is resolved after parsing (Worker.Root): help stays the
	// same on every machine.
	fs.StringVar(&w.WorkRoot, "work-root", "", "where the workspaces of runs pinned here are made, one directory per run (default: runner-temporal/work in the user's cache directory)")
	fs.BoolVar(&w.SharedWorkspace, "shared-workspace", false, "this worker sees every run's workdir and plan at the client's paths (one host, a shared disk): runs it takes are not pinned to it")
	fs.DurationVar(&w.Heartbeat, "heartbeat", time.Second, "how often a running step tells the server this worker is alive")
	fs.IntVar(&w.MaxSteps, "max-concurrent-steps", 0, "run at most `N` steps at once on this worker (default: the SDK's, 1000)")
	fs.StringVar(&w.Health, "health", "", "serve GET /healthz on this `ADDR` (e.g. 127.0.0.1:8081): 200 while the worker runs and reaches Temporal")
	fs.StringVar(&w.ExpectStoreID, "expect-store-id", os.Getenv("RUNNER_TEMPORAL_STORE_ID"), "refuse to start unless the store's id (its runner-store.json) is this `ID` (default $RUNNER_TEMPORAL_STORE_ID); the worker also refuses when an open run of its task queue was started with another store")
}

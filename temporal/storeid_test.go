package temporal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// A store's identity is written once: every handle on the same directory,
// including many creating it at once, reads the same id; another
// directory has another; a damaged identity is an error, not a new id.
func TestDirStoreIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := DirStore{Dir: dir}.ID()
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent first uses disagree: %v", ids)
		}
	}
	if id, _ := (DirStore{Dir: dir}).ID(); id != ids[0] {
		t.Errorf("the id changed: %s then %s", ids[0], id)
	}
	if other, _ := (DirStore{Dir: t.TempDir()}).ID(); other == ids[0] {
		t.Errorf("two stores share the id %s", other)
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".id-*"))
	if len(leftovers) > 0 {
		t.Errorf("temp files left: %v", leftovers)
	}
	// The id file is no blob: List leaves it out.
	var listed []string
	DirStore{Dir: dir}.List(context.Background(), func(b BlobInfo) error { listed = append(listed, b.Name); return nil })
	if len(listed) != 0 {
		t.Errorf("List: %v", listed)
	}
	if err := os.WriteFile(filepath.Join(dir, storeIDFile), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (DirStore{Dir: dir}).ID(); err == nil || !strings.Contains(err.Error(), "not a store identity") {
		t.Errorf("a damaged identity: %v", err)
	}
}

// A worker told which store to expect refuses another, naming both ids
// and its host.
func TestCheckWorkerStoreExpected(t *testing.T) {
	s := DirStore{Dir: t.TempDir()}
	id, err := CheckWorkerStore(context.Background(), nil, "default", "q", s, "")
	if err != nil || id == "" {
		t.Fatalf("no expectation: %q, %v", id, err)
	}
	if got, err := CheckWorkerStore(context.Background(), nil, "default", "q", s, id); err != nil || got != id {
		t.Errorf("the expected store: %q, %v", got, err)
	}
	_, err = CheckWorkerStore(context.Background(), nil, "default", "q", s, "rs-other")
	if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "rs-other") || !strings.Contains(err.Error(), hostname()) {
		t.Errorf("another store: %v; want both ids and the host", err)
	}
}

// A step of a run started with another store fails at once, not retried,
// naming both ids and the host: it would only find missing blobs.
func TestStepRefusedOnStoreMismatch(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	s := DirStore{Dir: t.TempDir()}
	id, _ := s.ID()
	acts := &Activities{Store: s, StoreID: id, Log: zerolog.Nop()}
	env.RegisterActivityWithOptions(acts.RunStep, activity.RegisterOptions{Name: ActivityName})
	src := "version: 1\nsteps:\n  - {label: a, type: command, run: \"echo a\"}\n"
	s.Put([]byte(src))
	_, err := env.ExecuteActivity(ActivityName, StepInput{PlanPath: "p.yaml", PlanSHA256: Sum([]byte(src)), Label: "a", Visit: 1, Attempt: 1, StoreID: "rs-elsewhere"})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != errStoreMismatch || !app.NonRetryable() {
		t.Fatalf("got %v; want a non-retryable %s", err, errStoreMismatch)
	}
	for _, want := range []string{id, "rs-elsewhere", hostname()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not name %s", err, want)
		}
	}
}

// Bad store values are clear errors, and never echo a credential.
func TestOpenStoreErrors(t *testing.T) {
	for _, c := range []struct {
		o    StoreOptions
		want string
	}{
		{StoreOptions{Store: "s3://AKIDEXAMPLE:hunter2secret@bucket/p"}, "credentials do not go in"},
		{StoreOptions{Store: "s3://bucket/p?secret_key=hunter2secret"}, "unknown option"},
		{StoreOptions{Store: "s3://bucket/p?path_style=maybe"}, "want true or false"},
		{StoreOptions{Store: "s3:///nobucket"}, "want s3://BUCKET"},
		{StoreOptions{Store: "gs://bucket/p"}, "want s3://BUCKET"},
		{StoreOptions{Store: "s3://bucket", S3Endpoint: "ftp://host"}, "want http://HOST"},
		{StoreOptions{Store: "s3://bucket", S3Endpoint: "http://u:hunter2secret@host"}, "want http://HOST"},
		{StoreOptions{Store: "/some/dir", S3Endpoint: "http://host"}, "go with --store s3://"},
	} {
		_, _, err := OpenStore(c.o, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("%+v: the error shows the secret: %v", c.o, err)
		}
	}
	s, spec, err := OpenStore(StoreOptions{Store: "s3://bucket/runs/x", S3Endpoint: "http://127.0.0.1:7070", S3PathStyle: true},
		func(k string) string { return map[string]string{"AWS_REGION": "eu-west-1"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if want := "s3://bucket/runs/x/?endpoint=http%3A%2F%2F127.0.0.1%3A7070&path_style=true&region=eu-west-1"; spec != want {
		t.Errorf("spec %s, want %s", spec, want)
	}
	again, err := ParseStoreURL(spec)
	if err != nil || again.URL() != spec || again.Prefix != "runs/x/" {
		t.Errorf("the spec does not read back: %+v, %v", again, err)
	}
	if got := s.String(); got != "s3://bucket/runs/x/ at http://127.0.0.1:7070" {
		t.Errorf("String: %s", got)
	}
	if _, spec, _ := OpenStore(StoreOptions{Store: "/tmp/blobs"}, os.Getenv); spec != "/tmp/blobs" {
		t.Errorf("directory spec %s", spec)
	}
}

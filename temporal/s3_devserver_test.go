package temporal

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/planrunner/runner/internal/testutil/testtool"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// s3Server is an S3-compatible server (versitygw, posix backend) on
// loopback, with one bucket, for one test.
type s3Server struct {
	endpoint, bucket, access, secret string
	client                           *minio.Client
}

// s3ServerBin is $RUNNER_S3_SERVER_BIN (.ci/install builds versitygw, .ci/run
// sets it), else versitygw on PATH; missing, the test skips (fails under
// CI=true).
func s3ServerBin(t testing.TB) string {
	const how = "`go install github.com/versity/versitygw/cmd/versitygw@v1.8.0` builds it; .ci/install does, and .ci/run sets RUNNER_S3_SERVER_BIN to it"
	if os.Getenv("RUNNER_S3_SERVER_BIN") != "" {
		return testtool.FromEnv(t, "RUNNER_S3_SERVER_BIN", "versitygw, an S3-compatible server", how)
	}
	return testtool.LookPath(t, "versitygw", "versitygw, an S3-compatible server; "+how+", or set RUNNER_S3_SERVER_BIN")
}

func startS3Server(t testing.TB) *s3Server {
	bin := s3ServerBin(t)
	root := t.TempDir()
	s := &s3Server{bucket: "runner-test", access: "rt-access-7f3a9c", secret: "rt-secret-b81d44e0c2aa9f"}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s.endpoint = "http://" + addr
	cmd := exec.Command(bin, "--port", addr, "posix", root)
	// The server's root credentials go in its environment, not its argv.
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.access, "ROOT_SECRET_ACCESS_KEY="+s.secret)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s:\n%s", addr, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mc, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(s.access, s.secret, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(context.Background(), s.bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("creating bucket: %v\n%s", err, log)
	}
	s.client = mc
	return s
}

// objects lists the keys under prefix.
func (s *s3Server) objects(t testing.TB, prefix string) []string {
	var keys []string
	for o := range s.client.ListObjects(context.Background(), s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

// useCredentials puts the server's credentials in this process's
// environment, where the store and the processes the test starts read them.
func (s *s3Server) useCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.secret)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("HOME", t.TempDir()) // no shared credentials file of the user's
}

func (s *s3Server) storeURL(prefix string) string {
	return S3Config{Bucket: s.bucket, Prefix: prefix + "/", Endpoint: s.endpoint, PathStyle: true}.URL()
}

// The S3 store against a real S3 server: Put, Get, a missing blob, a
// damaged one, the identity written once, List and Delete; wrong
// credentials and a missing bucket are plain errors.
func TestS3StoreAgainstServer(t *testing.T) {
	srv := startS3Server(t)
	srv.useCredentials(t)
	s, _, err := OpenStore(StoreOptions{Store: srv.storeURL("unit")}, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	sw := s.(Sweeper)
	name, err := s.Put([]byte("a board chunk"))
	if err != nil || name != Sum([]byte("a board chunk")) {
		t.Fatalf("Put: %s, %v", name, err)
	}
	if got, err := s.Get(name); err != nil || string(got) != "a board chunk" {
		t.Fatalf("Get: %q, %v", got, err)
	}
	if _, err := s.Get(Sum([]byte("never put"))); err == nil || !strings.Contains(err.Error(), "is not in the store") {
		t.Errorf("Get of a missing blob: %v", err)
	}
	if _, err := srv.client.PutObject(context.Background(), srv.bucket, "unit/"+name[:2]+"/"+name, strings.NewReader("tampered"), 8, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(name); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Get of a damaged blob: %v", err)
	}
	id1, err := s.ID()
	if err != nil {
		t.Fatal(err)
	}
	again, _, _ := OpenStore(StoreOptions{Store: srv.storeURL("unit")}, os.Getenv)
	if id2, err := again.ID(); err != nil || id2 != id1 {
		t.Errorf("the identity changed: %s then %s, %v", id1, id2, err)
	}
	other, _, _ := OpenStore(StoreOptions{Store: srv.storeURL("other")}, os.Getenv)
	if id3, err := other.ID(); err != nil || id3 == id1 {
		t.Errorf("another prefix has the same identity %s (%v)", id3, err)
	}
	var listed []string
	if err := sw.List(context.Background(), func(b BlobInfo) error { listed = append(listed, b.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0] != name {
		t.Errorf("List: %v, want only %s (not the identity)", listed, name)
	}
	if err := sw.Delete(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	if err := sw.Delete(context.Background(), name); err != nil {
		t.Errorf("deleting a deleted blob: %v", err)
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret")
	bad, _, _ := OpenStore(StoreOptions{Store: srv.storeURL("unit")}, os.Getenv)
	_, err = bad.Put([]byte("x"))
	if err == nil || !strings.Contains(err.Error(), "access refused") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong credentials: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.secret)
	nob, _, _ := OpenStore(StoreOptions{Store: S3Config{Bucket: "no-such-bucket", Endpoint: srv.endpoint, PathStyle: true}.URL()}, os.Getenv)
	if _, err := nob.Put([]byte("x")); err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
}

const forEachPlan = `
version: 1
name: fan-out
vars: {names: [ada, bob, cy, dee]}
steps:
  - label: greet
    type: command
    for_each: vars.names
    max_concurrency: 2
    run: "echo hello ${{ item }}"
  - {label: put, type: board, op: write, key: greeted, value: "${{ join(steps.greet.outputs, ' ') }}"}
  - {label: last, type: command, run: "echo ${{ board('greeted') }}"}
`

// The flagship example and a for_each fan-out on the dev server with the
// S3 store: both succeed, their blobs are in the bucket, the fan-out's
// board equals a local-directory run's, and the S3 credentials are in no
// file of the run, no log and no history. A worker with another store is
// refused at start; gc after the runs are deleted from Temporal frees
// their blobs and keeps an open run's.
func TestDevServerS3Store(t *testing.T) {
	c := newCluster(t)
	srv := startS3Server(t)
	// The example runs go test: with the build cache go test itself uses
	// (as cmd/runner's example tests do), not a cold one.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	srv.useCredentials(t)
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	local := c.blobs
	c.blobs = srv.storeURL("e2e")
	c.worker(t)

	example, _ := filepath.Abs("../examples/fix-tests/plan.yaml")
	fanout := writePlan(t, c.work, forEachPlan)
	var outs []string
	for i, plan := range []string{example, fanout} {
		out := filepath.Join(c.work, fmt.Sprintf("run%d", i), "blackboard.json")
		p := c.run(t, plan, out)
		if code := p.wait(t, 5*time.Minute); code != 0 {
			t.Fatalf("%s: exit %d\n%s\nworker:\n%s", plan, code, p.out, c.workers[0].out)
		}
		if e := endOf(t, p.out.String()); e.Status != "succeeded" {
			t.Fatalf("%s: %s %s", plan, e.Status, e.Error)
		}
		outs = append(outs, out)
	}
	keys := srv.objects(t, "e2e/")
	blobs := 0
	for _, k := range keys {
		if validName(filepath.Base(k)) == nil {
			blobs++
		}
	}
	if blobs < 4 || !contains(keys, "e2e/"+storeIDFile) {
		t.Errorf("bucket holds %d blobs and keys %v; want the runs' blobs and the identity", blobs, keys)
	}
	if fi, _ := os.ReadDir(local); len(fi) != 0 {
		t.Errorf("the local directory was written: %v", fi)
	}

	// The same fan-out on a local-directory store: the same board.
	dc := *c
	dc.blobs, dc.queue, dc.workers = local, c.queue+"-dir", nil
	dw := dc.worker(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("local-directory worker:\n%s", dw.out)
		}
	})
	outDir := filepath.Join(c.work, "dir", "blackboard.json")
	if p := dc.run(t, fanout, outDir); p.wait(t, 3*time.Minute) != 0 {
		t.Fatalf("local-directory run:\n%s\nworker:\n%s", p.out, dw.out)
	}
	s3b, dirb := loadBoard(t, outs[1]), loadBoard(t, outDir)
	if d := sameSteps(s3b.Steps(), dirb.Steps()); d != "" {
		t.Errorf("the S3 run's steps differ from the local-directory run's: %s", d)
	}
	if d := firstDiff(entriesView(s3b), entriesView(dirb)); d != "" {
		t.Errorf("the S3 run's entries differ: %s", d)
	}

	var tc client.Client
	tc, err = client.Dial(client.Options{HostPort: c.srv.hostPort, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()

	// Every blob of the runs above is older than t0; every blob of the run
	// started next is younger than t0+2s (S3 times are in seconds): gc's
	// grace period is set between the two.
	t0 := time.Now()
	time.Sleep(3 * time.Second)

	// A run left open (it sleeps), then a worker with another store:
	// refused at start, naming both ids.
	sleeper := writePlan(t, t.TempDir(), "version: 1\nname: sleeper\nsteps:\n  - {label: nap, type: command, run: \"sleep 12\"}\n  - {label: after, type: command, run: \"echo ${{ steps.nap.status }}\"}\n")
	openOut := filepath.Join(c.work, "open", "blackboard.json")
	open := c.run(t, sleeper, openOut)
	waitOpen(t, tc, c.queue)
	s3Store, _, _ := OpenStore(StoreOptions{Store: c.blobs}, os.Getenv)
	s3ID, _ := s3Store.ID()
	dirID, _ := DirStore{Dir: local}.ID()
	for _, args := range [][]string{
		{"--blobs", local},
		{"--blobs", c.blobs, "--expect-store-id", dirID},
	} {
		w := startProc(t, c.work, c.rt, append([]string{"worker", "--temporal", c.srv.hostPort, "--task-queue", c.queue}, args...)...)
		code := w.wait(t, time.Minute)
		msg := w.out.String()
		if code == 0 || !strings.Contains(msg, "refusing to poll") || !strings.Contains(msg, s3ID) || !strings.Contains(msg, dirID) {
			t.Errorf("worker %v: exit %d, want a refusal naming %s and %s:\n%s", args, code, s3ID, dirID, msg)
		}
	}

	// Credentials: in no file of the runs, no log, no history.
	var texts []string
	for _, p := range append([]*proc{open}, c.workers...) {
		texts = append(texts, p.out.String())
	}
	filepath.Walk(c.work, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(p)
			texts = append(texts, p+": "+string(data))
		}
		return nil
	})
	for _, out := range outs {
		id := WorkflowIDOf(loadBoard(t, out).Run())
		hist := exec.Command(temporalCLI(t), "workflow", "show", "-w", id, "--address", c.srv.hostPort, "-o", "json")
		data, err := hist.CombinedOutput()
		if err != nil || !strings.Contains(string(data), "runner.step") {
			t.Fatalf("temporal workflow show: %v\n%s", err, data)
		}
		texts = append(texts, string(data))
	}
	for _, text := range texts {
		for _, secret := range []string{srv.secret, srv.access} {
			if strings.Contains(text, secret) {
				t.Errorf("a credential appears in: %.300s", text)
			}
		}
	}

	// gc: delete the finished runs from Temporal; their blobs go, the open
	// run's stay (it goes on and succeeds).
	before := len(srv.objects(t, "e2e/"))
	for _, out := range outs {
		id := WorkflowIDOf(loadBoard(t, out).Run())
		if _, err := tc.WorkflowService().DeleteWorkflowExecution(context.Background(), &workflowservice.DeleteWorkflowExecutionRequest{
			Namespace: "default", WorkflowExecution: workflowExecution(id)}); err != nil {
			t.Fatal(err)
		}
	}
	waitCount(t, tc, fmt.Sprintf("WorkflowType = '%s' AND TaskQueue = '%s'", WorkflowName, c.queue), 1)
	grace := time.Since(t0) - 1500*time.Millisecond
	listed := srv.objects(t, "e2e/")
	rep, err := GC(context.Background(), tc, s3Store.(Sweeper), GCOptions{Namespace: "default", Grace: grace, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	still := srv.objects(t, "e2e/")
	for _, k := range listed {
		if !contains(still, k) {
			t.Errorf("the dry run deleted %s", k)
		}
	}
	if rep.Deleted == 0 {
		t.Fatalf("dry run: %+v; found nothing to delete", rep)
	}
	rep, err = GC(context.Background(), tc, s3Store.(Sweeper), GCOptions{Namespace: "default", Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted == 0 || rep.Referenced == 0 || len(srv.objects(t, "e2e/")) >= before {
		t.Errorf("gc: %+v; objects before %d, now %d", rep, before, len(srv.objects(t, "e2e/")))
	}
	exSrc, _ := os.ReadFile(example)
	if _, err := s3Store.Get(Sum(exSrc)); err == nil {
		t.Errorf("the deleted example run's plan source is still in the store")
	}
	sleeperSrc, _ := os.ReadFile(sleeper)
	if _, err := s3Store.Get(Sum(sleeperSrc)); err != nil {
		t.Errorf("the open run's plan source was deleted: %v", err)
	}
	if code := open.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("the open run after gc: exit %d\n%s", code, open.out)
	}
	if b := loadBoard(t, openOut); runSummary(b) != "nap:succeeded after:succeeded" {
		t.Errorf("the open run after gc: %s", runSummary(b))
	}
}

func workflowExecution(id string) *commonpb.WorkflowExecution {
	return &commonpb.WorkflowExecution{WorkflowId: id}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// waitOpen waits until a run of queue is open in visibility.
func waitOpen(t *testing.T, tc client.Client, queue string) {
	waitCount(t, tc, fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running'", queue), 1)
}

func waitCount(t *testing.T, tc client.Client, q string, n int) {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", Query: q})
		if err == nil && len(resp.GetExecutions()) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q: %d runs, want %d (%v)", q, len(resp.GetExecutions()), n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

package temporal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// securedFrontend stands in front of a dev server as a secured cluster
// does: TLS with a certificate of its own CA, a client certificate
// required (mutual TLS), and an API key required on every call (the
// authorization header Temporal Cloud checks). Calls that pass are
// proxied to the dev server as they are (gRPC over HTTP/2).
type securedFrontend struct {
	addr                      string
	ca, clientCert, clientKey string // PEM files
	authorized, refused       atomic.Int64
}

const testAPIKey = "tk-secret-4242"

func startSecuredFrontend(t *testing.T, backend string) *securedFrontend {
	dir := t.TempDir()
	caKey, caCert, caDER := newCA(t)
	f := &securedFrontend{ca: writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)}
	serverCert := issue(t, caCert, caKey, "frontend", x509.ExtKeyUsageServerAuth)
	cc := issue(t, caCert, caKey, "worker", x509.ExtKeyUsageClientAuth)
	f.clientCert = writePEM(t, dir, "client.pem", "CERTIFICATE", cc.Certificate[0])
	keyDER, err := x509.MarshalPKCS8PrivateKey(cc.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	f.clientKey = writePEM(t, dir, "client.key", "PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)

	target, _ := url.Parse("http://" + backend)
	proxy := httputil.NewSingleHostReverseProxy(target)
	h2c := &http.Transport{Protocols: new(http.Protocols)} // gRPC to the dev server: HTTP/2 without TLS
	h2c.Protocols.SetUnencryptedHTTP2(true)
	proxy.Transport = h2c
	// FlushInterval stays 0: a streamed answer (no Content-Length: long
	// polls, heartbeats) is flushed at once anyway, and a gRPC error comes
	// as headers alone that must reach the client in one frame ending the
	// stream. Flushing at once would race the handler's end and could send
	// the headers first and the stream's end apart, which a gRPC client
	// reads as a stream closed without trailers (codes.Internal).
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testAPIKey {
			f.refused.Add(1)
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Grpc-Status", "16") // Unauthenticated
			w.Header().Set("Grpc-Message", "missing or wrong API key")
			w.WriteHeader(http.StatusOK)
			return
		}
		f.authorized.Add(1)
		proxy.ServeHTTP(w, r)
	})
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	quiet := log.New(io.Discard, "", 0) // refused handshakes are the point
	proxy.ErrorLog = quiet
	srv := &http.Server{Handler: handler, ErrorLog: quiet}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f.addr = ln.Addr().String()
	return f
}

func newCA(t *testing.T) (*ecdsa.PrivateKey, *x509.Certificate, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "runner test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return key, cert, der
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string, usage x509.ExtKeyUsage) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"frontend.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A plan run on a secured cluster through the default runner binary:
// the worker dials with mutual TLS and an API key file, the run with the
// same certificates and the key from TEMPORAL_API_KEY; the run waits for
// an input, and `runner board` and `runner answer` reach it with the
// TLS options recorded in its remote.json (the key again from the
// environment: it is written nowhere). Without the client certificate,
// without the key, or with TLS turned off, nothing gets through, with a
// clear error. The worker's health endpoint answers while it runs.
func TestDevServerSecuredCluster(t *testing.T) {
	c := newCluster(t)
	f := startSecuredFrontend(t, c.srv.hostPort)
	t.Setenv("RUNNER_TEMPORAL", c.rt)
	keyFile := filepath.Join(t.TempDir(), "api-key")
	os.WriteFile(keyFile, []byte(testAPIKey+"\n"), 0o600)
	mtls := []string{"--tls-ca", f.ca, "--tls-cert", f.clientCert, "--tls-key", f.clientKey}

	healthAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	w := startProc(t, c.work, c.rt, append([]string{"worker", "--temporal", f.addr, "--task-queue", c.queue, "--blobs", c.blobs,
		"--api-key-file", keyFile, "--max-concurrent-steps", "2", "--health", healthAddr, "--log-format", "json", "--work-root", t.TempDir()}, mtls...)...)
	waitOutput(t, w, "worker started", time.Minute)
	if body := httpGet(t, "http://"+healthAddr+"/healthz"); strings.TrimSpace(body) != "ok" {
		t.Errorf("health: %q", body)
	}

	t.Setenv("TEMPORAL_API_KEY", testAPIKey)
	plan := writePlan(t, c.work, liveReviewPlan)
	out := filepath.Join(c.work, "bb.json")
	run := startProc(t, c.work, c.runner, append([]string{"run", plan, "--engine", "temporal", "--temporal", f.addr,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", out}, mtls...)...)
	waitOutput(t, run, "runner answer", 2*time.Minute)
	rem, err := os.ReadFile(out + ".remote")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rem), `"tls_cert": "`+f.clientCert+`"`) || strings.Contains(string(rem), testAPIKey) {
		t.Errorf("remote.json should hold the TLS files and never the key:\n%s", rem)
	}
	if code, got := c.cli(t, "board", out, "get", "jobs:next"); code != 0 || strings.TrimSpace(got) != "build" {
		t.Errorf("board get through the secured cluster: exit %d, %q", code, got)
	}
	if code, got := c.cli(t, "answer", out, "--step", "review", "--set", "approve=true"); code != 0 || !strings.Contains(got, "answered review") {
		t.Errorf("answer through the secured cluster: exit %d, %q", code, got)
	}
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run exit %d:\n%s", code, run.out)
	}
	if s := stepOf(t, loadBoard(t, out), "deploy"); !strings.Contains(string(s.Result), "approve=true") {
		t.Errorf("deploy: %s", s.Result)
	}
	for _, p := range []*proc{w, run} {
		if strings.Contains(p.out.String(), testAPIKey) {
			t.Errorf("%s printed the API key:\n%s", p.cmd.Path, p.out)
		}
	}
	if f.authorized.Load() == 0 {
		t.Fatal("no call went through the secured frontend")
	}

	// What must not get through.
	refusedBefore := f.refused.Load()
	plain := filepath.Join(c.work, "never.json")
	for _, tc := range []struct {
		name string
		args []string
		env  string // TEMPORAL_API_KEY
		want string
	}{
		{"no client certificate", []string{"--tls-ca", f.ca}, testAPIKey, "certificate"},
		{"no API key", mtls, "", "API key"},
		{"wrong API key", mtls, "nope", "API key"},
		{"TLS turned off with a key", append([]string{"--tls=false"}, mtls...), testAPIKey, "in clear"},
		{"a certificate without its key", []string{"--tls-cert", f.clientCert}, testAPIKey, "--tls-key"},
		{"a CA file that is not there", []string{"--tls-ca", f.ca + ".missing"}, testAPIKey, "--tls-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_API_KEY", tc.env)
			args := append([]string{"run", plan, "--temporal", f.addr, "--task-queue", c.queue, "--blobs", c.blobs, "--out", plain}, tc.args...)
			p := startProc(t, c.work, c.rt, args...)
			code := p.wait(t, 2*time.Minute)
			if code == 0 || !strings.Contains(p.out.String(), tc.want) {
				t.Errorf("exit %d; want a failure naming %q:\n%s", code, tc.want, p.out)
			}
		})
	}
	if f.refused.Load() == refusedBefore {
		t.Error("the frontend refused no call: the API key cases did not reach it")
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// A worker started with --max-concurrent-steps 1 runs the steps of a
// parallel group one at a time: each step holds a directory while it
// runs, and one that finds it held fails. The same plan with the
// default limit has the two steps overlap (so the check can fail).
func TestDevServerWorkerStepLimit(t *testing.T) {
	c := newCluster(t)
	// The children hold one directory of the host's, outside the
	// workspace: spread over the pool, each child has a workspace of its
	// own, so only a path they both see tells whether they overlapped.
	held := filepath.Join(t.TempDir(), "held")
	plan := writePlan(t, c.work, fmt.Sprintf(`
version: 1
steps:
  - label: both
    parallel:
      - {label: a, type: command, run: "mkdir %[1]s && sleep 2 && rmdir %[1]s"}
      - {label: b, type: command, run: "mkdir %[1]s && sleep 2 && rmdir %[1]s"}
`, held))
	for _, tc := range []struct {
		limit string
		ok    bool
	}{{"1", true}, {"0", false}} {
		t.Run("limit "+tc.limit, func(t *testing.T) {
			queue := c.queue + "-" + tc.limit
			w := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--task-queue", queue, "--blobs", c.blobs,
				"--max-concurrent-steps", tc.limit, "--log-format", "json", "--work-root", t.TempDir())
			out := filepath.Join(c.work, "limit-"+tc.limit+".json")
			p := startProc(t, c.work, c.rt, "run", plan, "--temporal", c.srv.hostPort, "--task-queue", queue, "--blobs", c.blobs, "--out", out)
			code := p.wait(t, 2*time.Minute)
			if (code == 0) != tc.ok {
				t.Errorf("--max-concurrent-steps %s: exit %d; want success %v:\n%s", tc.limit, code, tc.ok, p.out)
			}
			w.cmd.Process.Signal(os.Interrupt)
			w.wait(t, time.Minute)
		})
	}
	p := startProc(t, c.work, c.rt, "worker", "--temporal", c.srv.hostPort, "--max-concurrent-steps", "-1")
	if code := p.wait(t, time.Minute); code != 2 || !strings.Contains(p.out.String(), "want 1 or more") {
		t.Errorf("--max-concurrent-steps -1: exit %d, %s", code, p.out)
	}
}

// A plan that fails is a failed workflow, and an interrupted one a
// canceled workflow, as Temporal's own tools show them: `temporal
// workflow list --query 'ExecutionStatus="Failed"'` finds the failed run
// and not the one that succeeded, and the failure's message names the
// plan and its error. runner still gets the run's output (its board) from
// the failure and saves blackboard.json as for any run.
func TestDevServerFailedPlanIsFailedWorkflow(t *testing.T) {
	c := newCluster(t)
	c.worker(t)
	ids := map[string]string{}
	for _, tc := range []struct{ name, src string }{
		{"ok", "version: 1\nname: fine\nsteps:\n  - {label: a, type: command, run: 'echo ok'}\n"},
		{"bad", "version: 1\nname: broken\nsteps:\n  - {label: a, type: command, run: 'exit 3'}\n"},
	} {
		plan := writePlan(t, c.work, tc.src)
		out := filepath.Join(c.work, tc.name+".json")
		p := c.run(t, plan, out)
		code := p.wait(t, 2*time.Minute)
		if want := map[string]int{"ok": 0, "bad": 1}[tc.name]; code != want {
			t.Fatalf("%s: exit %d, want %d:\n%s", tc.name, code, want, p.out)
		}
		b := loadBoard(t, out)
		ids[tc.name] = WorkflowIDOf(b.Run())
		if tc.name == "bad" && (b.Run().Status != "failed" || runSummary(b) != "a:failed") {
			t.Errorf("the failed run's board: %s, %s", b.Run().Status, runSummary(b))
		}
	}
	list := func(query string) string {
		t.Helper()
		cmd := exec.Command(temporalCLI(t), "workflow", "list", "--address", c.srv.hostPort, "--query", query, "--output", "json")
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("temporal workflow list --query %s: %v\n%s", query, err, got)
		}
		return string(got)
	}
	failed := list(`ExecutionStatus="Failed"`)
	if !strings.Contains(failed, ids["bad"]) || strings.Contains(failed, ids["ok"]) {
		t.Errorf("failed workflows: want %s and not %s:\n%s", ids["bad"], ids["ok"], failed)
	}
	if done := list(`ExecutionStatus="Completed"`); !strings.Contains(done, ids["ok"]) {
		t.Errorf("completed workflows lack %s:\n%s", ids["ok"], done)
	}
	cmd := exec.Command(temporalCLI(t), "workflow", "describe", "--address", c.srv.hostPort, "--workflow-id", ids["bad"])
	got, _ := cmd.CombinedOutput()
	if !strings.Contains(string(got), "plan broken failed: step a: exit status 3") {
		t.Errorf("describe does not show the plan's error:\n%s", got)
	}
}

// A worker registers runner's search attributes on a namespace that
// lacks them (a dev server started without --search-attribute allows
// it), and a run keeps them up to date, so Temporal's own queries find
// it: by plan and version while it runs, as waiting while it waits for an
// answer (and no longer after), by its final status once it ended. Where
// the namespace does not allow it, a warning says so once
// (TestRegisterSearchAttributes).
func TestDevServerSearchAttributes(t *testing.T) {
	c := newCluster(t)
	w := c.worker(t)
	waitOutput(t, w, "worker started", time.Minute)
	if strings.Contains(w.out.String(), "search attributes") {
		t.Errorf("the worker warns of search attributes it could register:\n%s", w.out)
	}
	t.Setenv("RUNNER_TEMPORAL", c.rt)
	plan := writePlan(t, c.work, liveReviewPlan)
	out := filepath.Join(c.work, "bb.json")
	run := startProc(t, c.work, c.runner, "run", plan, "--engine", "temporal", "--temporal", c.srv.hostPort,
		"--task-queue", c.queue, "--blobs", c.blobs, "--out", out)
	waitOutput(t, run, "runner answer", 2*time.Minute)
	rem, err := liveboardRemote(out)
	if err != nil {
		t.Fatal(err)
	}
	// Visibility is eventually consistent: ask until it shows (or a minute).
	until := func(query string, want bool) {
		t.Helper()
		var got []byte
		for deadline := time.Now().Add(time.Minute); ; {
			got, err = exec.Command(temporalCLI(t), "workflow", "list", "--address", c.srv.hostPort, "--query", query, "--output", "json").CombinedOutput()
			if err == nil && strings.Contains(string(got), rem) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("temporal workflow list --query %s: listed %s = %v, want %v (err %v)\n%s", query, rem, !want, want, err, got)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	until(`RunnerWaiting=true AND RunnerPlan="live-review" AND RunnerStatus="running"`, true)
	until(`RunnerVersion="dev"`, true)
	if code, got := c.cli(t, "answer", out, "--step", "review", "--set", "approve=true"); code != 0 {
		t.Fatalf("answer: exit %d, %q", code, got)
	}
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run exit %d:\n%s", code, run.out)
	}
	until(`RunnerStatus="succeeded" AND RunnerPlan="live-review"`, true)
	until(`RunnerWaiting=true`, false)
}

// liveboardRemote is the workflow id a run's remote.json names.
func liveboardRemote(board string) (string, error) {
	data, err := os.ReadFile(board + ".remote")
	if err != nil {
		return "", err
	}
	var r struct {
		WorkflowID string `json:"workflow_id"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return "", err
	}
	return r.WorkflowID, nil
}

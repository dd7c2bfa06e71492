package temporal

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"
)

// The codec server turns a payload kept in the store back into the JSON
// it stands for, leaves others alone, says which blob it could not read
// (without failing the rest), and answers the Web UI's origin only.
func TestCodecServer(t *testing.T) {
	store := DirStore{Dir: t.TempDir()}
	dc := DataConverter(store, 0)
	big := strings.Repeat("x", 100<<10) + "MARKER"
	ref, err := dc.ToPayload(map[string]string{"plan": big})
	if err != nil {
		t.Fatal(err)
	}
	if string(ref.Metadata[converter.MetadataEncoding]) != blobEncoding {
		t.Fatalf("a %d-byte value was not kept in the store", len(big))
	}
	small, _ := dc.ToPayload("small")
	missing := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte(strings.Repeat("ab", 32))}
	bad := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(blobEncoding)}, Data: []byte("../../etc/passwd")}

	srv := httptest.NewServer(CodecHandler(store, []string{"http://localhost:8233"}))
	defer srv.Close()
	post := func(path, origin string, ps ...*commonpb.Payload) (*http.Response, []*commonpb.Payload) {
		t.Helper()
		body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: ps})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out commonpb.Payloads
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		if resp.StatusCode == http.StatusOK {
			if err := protojson.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatalf("%s: %v: %s", path, err, buf.String())
			}
		}
		return resp, out.Payloads
	}

	resp, got := post("/decode", "", ref, small, missing, bad)
	if resp.StatusCode != http.StatusOK || len(got) != 4 {
		t.Fatalf("decode: %s, %d payloads", resp.Status, len(got))
	}
	var v map[string]string
	if err := json.Unmarshal(got[0].Data, &v); err != nil || v["plan"] != big || string(got[0].Metadata[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
		t.Errorf("the blob was not decoded to its JSON: %.80s (%v)", got[0].Data, err)
	}
	if string(got[1].Data) != string(small.Data) {
		t.Errorf("a small payload changed: %s", got[1].Data)
	}
	for i, want := range map[int]string{2: "is not in the store", 3: "not a blob name"} {
		if !strings.Contains(string(got[i].Data), want) || !strings.Contains(string(got[i].Data), "runner_blob") {
			t.Errorf("payload %d: %s; want a note saying %q", i, got[i].Data, want)
		}
	}

	// The namespace-prefixed path the Web UI may use, and encode.
	plain, _ := converter.GetDefaultDataConverter().ToPayload(map[string]string{"plan": big})
	resp, got = post("/default/encode", "", plain, small)
	if resp.StatusCode != http.StatusOK || len(got) != 2 || string(got[1].Data) != string(small.Data) ||
		string(got[0].Metadata[converter.MetadataEncoding]) != blobEncoding || string(got[0].Data) != string(ref.Data) {
		t.Fatalf("encode: %s %v", resp.Status, got)
	}

	for _, c := range []struct {
		name, method, origin string
		allowed              bool
		status               int
	}{
		{"preflight from the UI", http.MethodOptions, "http://localhost:8233", true, http.StatusNoContent},
		{"post from the UI", http.MethodPost, "http://localhost:8233", true, http.StatusOK},
		{"preflight from elsewhere", http.MethodOptions, "http://evil.example", false, http.StatusNoContent},
		{"post from elsewhere", http.MethodPost, "http://evil.example", false, http.StatusOK},
		{"get", http.MethodGet, "", false, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, _ := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{small}})
			req, _ := http.NewRequest(c.method, srv.URL+"/decode", bytes.NewReader(body))
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			req.Header.Set("Access-Control-Request-Headers", "content-type,x-namespace")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Errorf("status %s, want %d", resp.Status, c.status)
			}
			allow := resp.Header.Get("Access-Control-Allow-Origin")
			if c.allowed && (allow != c.origin || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "X-Namespace")) {
				t.Errorf("CORS headers %v; want the UI's origin allowed with X-Namespace", resp.Header)
			}
			if !c.allowed && allow != "" {
				t.Errorf("origin %q allowed: %q", c.origin, allow)
			}
		})
	}
}

// `temporal workflow show --codec-endpoint` with runner-temporal's codec
// server shows the run's input (a plan over the blob threshold, kept in
// the store) as JSON; without it, only the blob's name is there.
func TestDevServerCodecServer(t *testing.T) {
	c := newCluster(t)
	c.worker(t)
	plan := writePlan(t, c.work, "# "+strings.Repeat("padding ", 10<<10)+"\n# CODEC-MARKER\nversion: 1\nsteps:\n  - {label: hello, type: command, run: \"echo hello\"}\n")
	out := filepath.Join(c.work, "bb.json")
	run := c.run(t, plan, out)
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("run exited %d:\n%s", code, run.out)
	}
	wf := endOf(t, run.out.String()).Workflow
	if wf == "" {
		t.Fatalf("no workflow id in:\n%s", run.out)
	}
	port := freePort(t)
	cs := startProc(t, c.work, c.rt, "codec-server", "--blobs", c.blobs, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--cors-origin", "http://localhost:8233")
	waitOutput(t, cs, "codec server on", 30*time.Second)

	show := func(extra ...string) string {
		args := append([]string{"workflow", "show", "--address", c.srv.hostPort, "-w", wf, "-o", "json"}, extra...)
		p := startProc(t, c.work, temporalCLI(t), args...)
		if code := p.wait(t, time.Minute); code != 0 {
			t.Fatalf("temporal %v exited %d:\n%s", args, code, p.out)
		}
		return p.out.String()
	}
	if plain := payloadsOf(show()); strings.Contains(plain, "CODEC-MARKER") || !strings.Contains(plain, blobEncoding) {
		t.Fatalf("the plan is in the history itself, not in the store: the test shows nothing")
	}
	decoded := payloadsOf(show("--codec-endpoint", fmt.Sprintf("http://127.0.0.1:%d", port)))
	if !strings.Contains(decoded, "CODEC-MARKER") || !strings.Contains(decoded, `"plan_source"`) || strings.Contains(decoded, blobEncoding) {
		t.Errorf("with the codec server, the run's input is not readable:\n%.2000s", decoded)
	}
}

// payloadsOf is the text of every payload of a `workflow show -o json`
// output (its metadata and data are base64).
func payloadsOf(out string) string {
	var b strings.Builder
	for _, m := range regexp.MustCompile(`"(?:data|encoding)": "([A-Za-z0-9+/=]+)"`).FindAllStringSubmatch(out, -1) {
		if d, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
			b.Write(d)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

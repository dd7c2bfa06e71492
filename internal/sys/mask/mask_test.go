package mask

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

const key = "sk-live-Zq9/x+Y<&>\"k3y\\42"

func TestMaskForms(t *testing.T) {
	m := New(key, "ab") // "ab" is too short to mask
	jsonKey, _ := json.Marshal(key)
	twice, _ := json.Marshal(string(jsonKey))
	for _, tc := range []struct{ name, text string }{
		{"raw", "error: " + key + " rejected"},
		{"bearer", "Authorization: Bearer " + key},
		{"json", `{"error":{"type":` + string(jsonKey) + `}}`},
		{"json twice", `{"body":` + string(twice) + `}`},
		{"url", "https://x/?k=" + url.QueryEscape(key)},
		{"basic auth", "Basic " + base64.StdEncoding.EncodeToString([]byte("user:"+key))},
		{"base64 shift 1", base64.StdEncoding.EncodeToString([]byte("x" + key + "tail"))},
		{"base64 shift 2", base64.URLEncoding.EncodeToString([]byte("xy" + key))},
		{"base64 shift 0", base64.RawStdEncoding.EncodeToString([]byte(key))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := m.String(tc.text)
			if got == tc.text || !strings.Contains(got, Replacement) {
				t.Fatalf("not masked: %s", got)
			}
			if strings.Contains(got, "k3y") && tc.name != "basic auth" && !strings.HasPrefix(tc.name, "base64") {
				t.Fatalf("part of the key left: %s", got)
			}
			if b := m.Bytes([]byte(tc.text)); !bytes.Equal(b, []byte(got)) {
				t.Fatalf("Bytes %q != String %q", b, got)
			}
		})
	}
	if s := "ab cd about"; m.String(s) != s {
		t.Fatalf("short value masked: %s", m.String(s))
	}
}

func TestMaskMultiline(t *testing.T) {
	pem := "-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----"
	m := New(pem)
	got := m.String("leaked line: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC")
	if strings.Contains(got, "MIIEvQ") {
		t.Fatalf("a line of a multi-line secret survived: %s", got)
	}
}

func TestWriterAndNil(t *testing.T) {
	var buf bytes.Buffer
	w := New("hunter22").Writer(&buf)
	n, err := w.Write([]byte(`{"msg":"pw hunter22"}` + "\n"))
	if err != nil || n != 22 || buf.String() != `{"msg":"pw ***"}`+"\n" {
		t.Fatalf("%d %v %q", n, err, buf.String())
	}
	var m *Masker
	if m.String("hunter22") != "hunter22" || !m.Empty() || m.Writer(&buf) != &buf {
		t.Fatal("a nil Masker must mask nothing")
	}
	m2 := New()
	if !m2.Empty() {
		t.Fatal("empty")
	}
	m2.Add("later-secret")
	if m2.String("x later-secret") != "x ***" {
		t.Fatal("Add")
	}
}

// BenchmarkMask: the cost of masking a 1 KiB text with three secrets (a
// run's two provider keys and a plan secret; ~20 forms in all), when the
// text holds none (nearly always) and when it holds one.
func BenchmarkMask(b *testing.B) {
	m := New("sk-proj-0123456789abcdefghij", "sk-ant-api03-zyxwvutsrqponmlk", "ghp_0123456789ABCDEFGHIJ")
	clean := strings.Repeat("a line of ordinary step output, nothing secret here\n", 20)[:1024]
	dirty := clean[:500] + "sk-proj-0123456789abcdefghij" + clean[528:]
	for _, tc := range []struct{ name, text string }{{"clean", clean}, {"secret", dirty}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				m.String(tc.text)
			}
		})
	}
}

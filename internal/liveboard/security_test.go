package liveboard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The options of a secured cluster: the environment fills what flags
// leave out, TLS turns on by itself when anything asks for it, and what
// cannot work is refused before anything dials.
func TestSecurity(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f.pem")
	os.WriteFile(file, []byte("x"), 0o600)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := env(nil)
	tests := []struct {
		name    string
		sec     Security
		getenv  func(string) string
		tls     bool
		wantErr string
	}{
		{"nothing: plain", Security{}, none, false, ""},
		{"a CA: TLS", Security{CAPath: file}, none, true, ""},
		{"an API key in the environment: TLS", Security{}, env(map[string]string{"TEMPORAL_API_KEY": "k"}), true, ""},
		{"TLS asked for alone", Security{TLS: "true"}, none, true, ""},
		{"TLS from the environment", Security{}, env(map[string]string{"TEMPORAL_TLS": "true"}), true, ""},
		{"mTLS from the environment", Security{}, env(map[string]string{"TEMPORAL_TLS_CERT": file, "TEMPORAL_TLS_KEY": file}), true, ""},
		{"a flag beats the environment", Security{TLS: "false"}, env(map[string]string{"TEMPORAL_TLS": "true"}), false, ""},
		{"not a boolean", Security{TLS: "yes please"}, none, false, `--tls "yes please": want true or false`},
		{"a certificate without its key", Security{CertPath: file}, none, true, "--tls-cert and --tls-key go together"},
		{"a missing file", Security{CAPath: file + ".gone"}, none, true, "--tls-ca " + file + ".gone"},
		{"a directory", Security{APIKeyFile: dir}, none, true, "not a regular file"},
		{"TLS off with a key", Security{TLS: "false"}, env(map[string]string{"TEMPORAL_API_KEY": "k"}), false, "in clear"},
		{"TLS off with a CA", Security{TLS: "false", CAPath: file}, none, false, "in clear"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.sec.WithEnv(tt.getenv)
			err := s.Check(tt.getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Check: %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.UseTLS(tt.getenv); got != tt.tls {
				t.Errorf("UseTLS = %v, want %v", got, tt.tls)
			}
		})
	}
}

// The key comes from the file's first line, else the environment; an
// empty file is an error; Args never carries a key, only the file's path.
func TestSecurityAPIKey(t *testing.T) {
	dir := t.TempDir()
	keyFile, empty := filepath.Join(dir, "key"), filepath.Join(dir, "empty")
	os.WriteFile(keyFile, []byte("  from-file \nsecond line\n"), 0o600)
	os.WriteFile(empty, []byte("\n"), 0o600)
	getenv := func(k string) string { return map[string]string{"TEMPORAL_API_KEY": "from-env"}[k] }
	if k, err := (Security{APIKeyFile: keyFile}).APIKey(getenv); err != nil || k != "from-file" {
		t.Errorf("file: %q, %v", k, err)
	}
	if k, err := (Security{}).APIKey(getenv); err != nil || k != "from-env" {
		t.Errorf("env: %q, %v", k, err)
	}
	if _, err := (Security{APIKeyFile: empty}).APIKey(getenv); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	args := Security{TLS: "true", CAPath: "/ca.pem", APIKeyFile: keyFile}.Args()
	if !slices.Equal(args, []string{"--tls=true", "--tls-ca=/ca.pem", "--api-key-file=" + keyFile}) {
		t.Errorf("Args = %q", args)
	}
	rel, _ := (Security{CAPath: "ca.pem"}).Abs()
	if !filepath.IsAbs(rel.CAPath) {
		t.Errorf("Abs left %q relative", rel.CAPath)
	}
}

package liveboard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Security is how runner-temporal reaches a secured Temporal cluster: TLS
// (the server verified against a CA file or the system's roots), mutual
// TLS (a client certificate and key), and an API key (Temporal Cloud).
// It is recorded in a run's remote.json, so `runner board` and `runner
// answer` reach the run the way it was started. Nothing in it is a
// secret: the API key itself is read from TEMPORAL_API_KEY or from the
// file APIKeyFile names when a connection is made, never from a command
// line (where ps shows it) and never written down.
type Security struct {
	// TLS: "true" or "false"; "": on when any other option is set (as
	// the Temporal CLI does).
	TLS        string `json:"tls,omitempty"`
	CertPath   string `json:"tls_cert,omitempty"`
	KeyPath    string `json:"tls_key,omitempty"`
	CAPath     string `json:"tls_ca,omitempty"`
	ServerName string `json:"tls_server_name,omitempty"`
	APIKeyFile string `json:"api_key_file,omitempty"`
}

// SecurityEnv are the environment variables Security takes an unset
// field from: the Temporal CLI's names, so a shell set up for `temporal`
// works for runner as it is. TEMPORAL_API_KEY is read at dial time
// (APIKey).
var SecurityEnv = map[string]func(*Security) *string{
	"TEMPORAL_TLS":             func(s *Security) *string { return &s.TLS },
	"TEMPORAL_TLS_CERT":        func(s *Security) *string { return &s.CertPath },
	"TEMPORAL_TLS_KEY":         func(s *Security) *string { return &s.KeyPath },
	"TEMPORAL_TLS_CA":          func(s *Security) *string { return &s.CAPath },
	"TEMPORAL_TLS_SERVER_NAME": func(s *Security) *string { return &s.ServerName },
	"TEMPORAL_API_KEY_FILE":    func(s *Security) *string { return &s.APIKeyFile },
}

// WithEnv fills the fields left empty from the environment.
func (s Security) WithEnv(getenv func(string) string) Security {
	for name, field := range SecurityEnv {
		if p := field(&s); *p == "" {
			*p = getenv(name)
		}
	}
	return s
}

// Check refuses what cannot work, before anything dials: an unreadable
// file, a certificate without its key (or the reverse), a TLS value that
// is not a boolean, TLS turned off while a TLS option or an API key asks
// for it.
func (s Security) Check(getenv func(string) string) error {
	if s.TLS != "" {
		if _, err := strconv.ParseBool(s.TLS); err != nil {
			return fmt.Errorf("--tls %q: want true or false", s.TLS)
		}
	}
	if (s.CertPath == "") != (s.KeyPath == "") {
		return errors.New("--tls-cert and --tls-key go together: a client certificate needs its key")
	}
	for _, f := range [][2]string{{"--tls-cert", s.CertPath}, {"--tls-key", s.KeyPath}, {"--tls-ca", s.CAPath}, {"--api-key-file", s.APIKeyFile}} {
		if f[1] == "" {
			continue
		}
		if st, err := os.Stat(f[1]); err != nil {
			return fmt.Errorf("%s %s: %w", f[0], f[1], err)
		} else if !st.Mode().IsRegular() {
			return fmt.Errorf("%s %s: not a regular file", f[0], f[1])
		}
	}
	if s.TLS != "" {
		if on, _ := strconv.ParseBool(s.TLS); !on && (s.others() || s.hasKey(getenv)) {
			return errors.New("--tls=false with a TLS option or an API key: the key or certificate would cross the network in clear; drop --tls=false")
		}
	}
	return nil
}

func (s Security) others() bool {
	return s.CertPath != "" || s.KeyPath != "" || s.CAPath != "" || s.ServerName != ""
}

func (s Security) hasKey(getenv func(string) string) bool {
	return s.APIKeyFile != "" || getenv("TEMPORAL_API_KEY") != ""
}

// UseTLS says whether the connection is TLS: as set, else whenever any
// other option or an API key is given.
func (s Security) UseTLS(getenv func(string) string) bool {
	if on, err := strconv.ParseBool(s.TLS); err == nil {
		return on
	}
	return s.others() || s.hasKey(getenv)
}

// APIKey is the key to send: the file's first line, else TEMPORAL_API_KEY;
// "" for none.
func (s Security) APIKey(getenv func(string) string) (string, error) {
	if s.APIKeyFile != "" {
		data, err := os.ReadFile(s.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		key, _, _ := strings.Cut(string(data), "\n")
		if key = strings.TrimSpace(key); key == "" {
			return "", fmt.Errorf("--api-key-file %s: the file is empty", s.APIKeyFile)
		}
		return key, nil
	}
	return getenv("TEMPORAL_API_KEY"), nil
}

// Abs makes s's paths absolute, so that a later command run from another
// directory (runner board on the run) finds the same files.
func (s Security) Abs() (Security, error) {
	for _, p := range []*string{&s.CertPath, &s.KeyPath, &s.CAPath, &s.APIKeyFile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return s, err
		}
		*p = abs
	}
	return s, nil
}

// Args are the flags that give s to runner-temporal.
func (s Security) Args() []string {
	var args []string
	for _, f := range [][2]string{{"--tls", s.TLS}, {"--tls-cert", s.CertPath}, {"--tls-key", s.KeyPath},
		{"--tls-ca", s.CAPath}, {"--tls-server-name", s.ServerName}, {"--api-key-file", s.APIKeyFile}} {
		if f[1] != "" {
			args = append(args, f[0]+"="+f[1])
		}
	}
	return args
}

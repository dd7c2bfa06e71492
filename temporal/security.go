package temporal

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/planrunner/runner/internal/liveboard"
	"go.temporal.io/sdk/client"
)

// Secure sets o up to reach a secured cluster as sec says: TLS with the
// server verified against sec's CA file (else the system's roots) under
// its server name, a client certificate for mutual TLS, an API key sent
// with every call. getenv reads TEMPORAL_API_KEY.
func Secure(o *client.Options, sec liveboard.Security, getenv func(string) string) error {
	if err := sec.Check(getenv); err != nil {
		return err
	}
	key, err := sec.APIKey(getenv)
	if err != nil {
		return err
	}
	if key != "" {
		o.Credentials = client.NewAPIKeyStaticCredentials(key)
	}
	if !sec.UseTLS(getenv) {
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: sec.ServerName}
	if sec.CAPath != "" {
		pem, err := os.ReadFile(sec.CAPath)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", sec.CAPath)
		}
		cfg.RootCAs = pool
	}
	if sec.CertPath != "" {
		cert, err := tls.LoadX509KeyPair(sec.CertPath, sec.KeyPath)
		if err != nil {
			return fmt.Errorf("--tls-cert %s, --tls-key %s: %w", sec.CertPath, sec.KeyPath, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	o.ConnectionOptions.TLS = cfg
	return nil
}

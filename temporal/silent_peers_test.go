package temporal

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// silentPeer listens on a loopback port, accepts every connection and
// never answers, until the test ends: a server that hangs.
func silentPeer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A peer that accepts the connection and then says nothing fails each
// wait on it within its bound (shortened here), with an error naming the
// peer, what was waited for and the flag that changes the bound: the
// Temporal server's dial, and each call to an S3 store.
func TestSilentPeersFailWithinTheirBound(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	const bound = 500 * time.Millisecond
	addr := silentPeer(t)
	store := func(t *testing.T) *S3Store {
		s, _, err := OpenStore(StoreOptions{Store: "s3://bucket/runs", S3Endpoint: "http://" + addr, S3PathStyle: true, Timeout: bound}, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return s.(*S3Store)
	}
	blob := Sum([]byte("x"))
	for _, tc := range []struct {
		name string
		call func(t *testing.T) error
		say  []string
	}{
		{"temporal dial", func(t *testing.T) error {
			c, err := Dial(client.Options{HostPort: addr, Logger: tlog.NewStructuredLogger(slog.New(slog.DiscardHandler))}, bound)
			if err == nil {
				c.Close()
			}
			return err
		}, []string{"the Temporal server at " + addr, "no answer within " + bound.String(), "--temporal-dial-timeout"}},
		{"s3 put", func(t *testing.T) error { _, err := store(t).Put([]byte("x")); return err },
			[]string{"writing blob " + blob, "s3://bucket/runs/ at http://" + addr, "no answer within " + bound.String(), "--store-timeout"}},
		{"s3 get", func(t *testing.T) error { _, err := store(t).Get(blob); return err },
			[]string{"reading blob " + blob, "s3://bucket/runs/ at http://" + addr, "no answer within " + bound.String(), "--store-timeout"}},
		{"s3 store id", func(t *testing.T) error { _, err := store(t).ID(); return err },
			[]string{"the store identity", "s3://bucket/runs/ at http://" + addr, "no answer within " + bound.String(), "--store-timeout"}},
		{"s3 list", func(t *testing.T) error { return store(t).List(t.Context(), func(BlobInfo) error { return nil }) },
			[]string{"listing blobs", "s3://bucket/runs/ at http://" + addr, "no answer within " + bound.String(), "--store-timeout"}},
		{"s3 delete", func(t *testing.T) error { return store(t).Delete(t.Context(), blob) },
			[]string{"deleting blob " + blob, "s3://bucket/runs/ at http://" + addr, "no answer within " + bound.String(), "--store-timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			done := make(chan error, 1)
			go func() { done <- tc.call(t) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(bound + 20*time.Second):
				t.Fatalf("still waiting after %s on a silent peer, with a bound of %s", time.Since(start), bound)
			}
			took := time.Since(start)
			if err == nil {
				t.Fatal("a silent peer answered")
			}
			t.Log(err)
			for _, want := range tc.say {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if took < bound*9/10 || took > bound+5*time.Second {
				t.Errorf("failed after %s, want about %s", took, bound)
			}
		})
	}
}

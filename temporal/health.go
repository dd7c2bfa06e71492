package temporal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"
)

// ServeHealth serves GET /healthz on addr for a worker: 200 "ok" while
// the worker's client reaches the Temporal frontend (its health check
// answers within 5 seconds), 503 with the reason otherwise. A process
// supervisor or a load balancer restarts or drains a worker on it. It
// returns a func that stops the server and the address it listens on.
func ServeHealth(addr string, c client.Client) (stop func(), bound string, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
			http.Error(w, fmt.Sprintf("temporal unreachable: %v", err), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	// Serve ends with ErrServerClosed at stop; the worker runs on
	// without the endpoint should it fail otherwise.
	go func() { _ = srv.Serve(ln) }()
	return func() { srv.Close() }, ln.Addr().String(), nil
}

package main

import (
	"log/slog"
	"net/http"
	"os"
	"time"
)

// The drain: at the shutdown signal serve first answers /readyz with 503 and
// goes on serving as before, accepting connections and requests, for the
// drain delay, so that whatever sends it traffic (a load balancer's health
// check, Kubernetes' endpoints) has moved that traffic to the other replicas
// before the listener closes. Only then does the shutdown proper begin
// (lifecycle.stop): the listener closes, the requests in flight finish,
// parked long-polls are answered, and the executor's sends reach their
// outcomes.
// drain runs the drain delay: /readyz fails from now on, and every answer
// the public listener gives closes its connection, so clients that keep
// connections open (a proxy, an agent's HTTP client) open their next one
// where the load balancer now sends them, and none is left idle here to be
// closed under a request when the listener closes. A second signal, or the
// HTTP server ending on its own, ends the drain early; drain returns the
// server's error then.
func (a *app) drain(delay time.Duration, again <-chan os.Signal) error {
	if delay <= 0 {
		return nil
	}
	a.draining.Store(true)
	a.logger.Info("draining: /readyz answers 503 while requests are still served; then serve stops",
		slog.Duration("drain_delay", delay))
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-again:
		a.logger.Warn("a second signal: the drain ends now")
	case err := <-a.http.served:
		return err
	}
	return nil
}

// closeWhileDraining answers with Connection: close once the drain has
// begun (see drain).
func (a *app) closeWhileDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

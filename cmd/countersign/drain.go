package main

import (
	"fmt"
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
const (
	// defaultDrainDelay is COUNTERSIGN_DRAIN_DELAY's default with a
	// configuration file: longer than a health check's interval and two
	// failures (Caddy's 1s in deploy/caddy), and about what Kubernetes takes
	// to take a terminating pod out of its endpoints.
	defaultDrainDelay = 5 * time.Second
	// maxDrainDelay bounds it: the drain only delays a restart.
	maxDrainDelay = time.Minute
)

// DrainDelay is how long serve keeps serving, with /readyz failing, between
// the shutdown signal and closing its listener: COUNTERSIGN_DRAIN_DELAY, else
// 5s with a configuration file and none for the local run, which has no
// load balancer in front and should stop at once.
func (c *Config) DrainDelay() time.Duration {
	if c.DrainDelaySetting == "" {
		if c.Local() {
			return 0
		}
		return defaultDrainDelay
	}
	d, err := parseDrainDelay(c.DrainDelaySetting)
	if err != nil {
		return defaultDrainDelay // Validate refuses it before serve runs
	}
	return d
}

// parseDrainDelay reads COUNTERSIGN_DRAIN_DELAY: a Go duration ("5s",
// "1500ms") or 0.
func parseDrainDelay(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	return time.ParseDuration(s)
}

// validateDrainDelay is Validate's part for COUNTERSIGN_DRAIN_DELAY.
func (c *Config) validateDrainDelay() []error {
	if c.DrainDelaySetting == "" {
		return nil
	}
	d, err := parseDrainDelay(c.DrainDelaySetting)
	if err != nil || d < 0 || d > maxDrainDelay {
		return []error{fmt.Errorf("COUNTERSIGN_DRAIN_DELAY is %q: give a duration from 0 to %s (such as 5s), or leave it unset (%s with a configuration file, 0 without)",
			c.DrainDelaySetting, maxDrainDelay, defaultDrainDelay)}
	}
	return nil
}

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

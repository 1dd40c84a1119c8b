package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/internal/startstop"
)

// The scheduler's Stop returns only once the sweep it was running has
// finished, and nothing is swept or started after it.
func TestSchedulerStopWaitsForTheRunningSweep(t *testing.T) {
	t.Parallel()
	s := newScheduler(slog.New(slog.DiscardHandler), soleLeader{}, prometheus.NewRegistry())
	sweeping, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	finished := false
	if err := s.add("slow", "@every 1s", func(ctx context.Context) error {
		once.Do(func() { close(sweeping) })
		<-ctx.Done() // Stop ends the sweep's context
		<-release    // and the sweep takes its time to wind down
		finished = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-sweeping
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	<-s.Stopping()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a sweep ran", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if !finished {
		t.Fatal("Stop returned before the sweep finished")
	}
	if err := s.Start(context.Background()); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

// The HTTP server's Stop returns only once the request in flight is
// answered and Serve has returned.
func TestHTTPServerStopWaitsForTheRequestInFlight(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	s := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "answered")
	}), ln, slog.New(slog.DiscardHandler))
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		resp, err := http.Get(s.base())
		if err != nil {
			answer <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		answer <- string(body)
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) with a request in flight", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Stopped():
	default:
		t.Fatal("Stop returned before Serve did")
	}
	if got := <-answer; got != "answered" {
		t.Fatalf("the request in flight got %q", got)
	}
	if err := s.Start(context.Background()); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

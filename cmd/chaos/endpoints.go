package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/sandbox"
)

// inFlight counts the requests a handler is serving, so a kill can be
// aimed at a moment when some are.
type inFlight struct{ n atomic.Int64 }

func (f *inFlight) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.n.Add(1)
		defer f.n.Add(-1)
		h.ServeHTTP(w, r)
	})
}

func (f *inFlight) busy() bool { return f.n.Load() > 0 }

// serveProvider serves a sandbox provider on loopback, counting writes in
// flight and recording each one in log before the provider sees it.
func serveProvider(s *scope, p *sandbox.Provider, flight *inFlight, log *writeLog) string {
	log.next = p
	srv := httptest.NewServer(flight.wrap(log))
	s.Cleanup(srv.Close)
	return srv.URL
}

// agentEndpoint receives the agent's callbacks and fails some of them
// (answering 500), as an agent having a bad moment does.
type agentEndpoint struct {
	failRate float64
	flight   inFlight

	mu        sync.Mutex
	delivered map[string]int             // delivery id → 2xx answers given
	requests  map[string]map[string]bool // request id → states told in callbacks answered 2xx
	failed    int
}

func newAgentEndpoint(s *scope, failRate float64) (*agentEndpoint, string) {
	a := &agentEndpoint{failRate: failRate, delivered: map[string]int{}, requests: map[string]map[string]bool{}}
	srv := httptest.NewServer(a.flight.wrap(http.HandlerFunc(a.serve)))
	s.Cleanup(srv.Close)
	return a, srv.URL
}

func (a *agentEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		Execution *struct {
			State string `json:"state"`
		} `json:"execution"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body)
	id := r.Header.Get(callback.DeliveryHeader)
	// An agent takes a moment to handle a callback: long enough for a kill
	// to land while one is in flight.
	time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
	a.mu.Lock()
	defer a.mu.Unlock()
	if rand.Float64() < a.failRate {
		a.failed++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	a.delivered[id]++
	state := body.Status
	if state == "approved" && body.Execution != nil {
		state = body.Execution.State
	}
	if a.requests[body.ID] == nil {
		a.requests[body.ID] = map[string]bool{}
	}
	a.requests[body.ID][state] = true
	w.WriteHeader(http.StatusNoContent)
}

// received reports whether delivery id was answered 2xx at least once.
func (a *agentEndpoint) received(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.delivered[id] > 0
}

// outcomes returns the states callbacks of request id told, in deliveries
// answered 2xx: the status, or the execution's state once approved.
func (a *agentEndpoint) outcomes(id string) map[string]bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]bool{}
	for s := range a.requests[id] {
		out[s] = true
	}
	return out
}

func (a *agentEndpoint) failures() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failed
}

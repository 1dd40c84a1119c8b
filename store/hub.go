package store

import "sync"

// Hub fans wake-ups out to in-process subscribers. The PostgreSQL Listener
// feeds it from NOTIFY; the SQLite driver feeds it after its own commits.
type Hub struct {
	mu      sync.Mutex
	changes map[string]map[chan struct{}]struct{}
	ready   map[chan struct{}]struct{}
}

var _ Notifier = (*Hub)(nil)

// NewHub returns a Hub with no subscribers.
func NewHub() *Hub {
	return &Hub{
		changes: make(map[string]map[chan struct{}]struct{}),
		ready:   make(map[chan struct{}]struct{}),
	}
}

// SubscribeChange returns a channel signalled when the request changes, and a
// function that ends the subscription.
func (h *Hub) SubscribeChange(requestID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	subs := h.changes[requestID]
	if subs == nil {
		subs = make(map[chan struct{}]struct{})
		h.changes[requestID] = subs
	}
	subs[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(subs, ch)
		if len(subs) == 0 {
			delete(h.changes, requestID)
		}
		h.mu.Unlock()
	}
}

// SubscribeReady returns a channel signalled when an execution becomes ready.
func (h *Hub) SubscribeReady() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.ready[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.ready, ch)
		h.mu.Unlock()
	}
}

// NotifyChange wakes the request's subscribers.
func (h *Hub) NotifyChange(requestID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.changes[requestID] {
		signal(ch)
	}
}

// NotifyReady wakes the ready subscribers.
func (h *Hub) NotifyReady() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.ready {
		signal(ch)
	}
}

// Broadcast wakes every subscriber, for when notifications may have been lost.
func (h *Hub) Broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.changes {
		for ch := range subs {
			signal(ch)
		}
	}
	for ch := range h.ready {
		signal(ch)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Waiting reports how many subscribers wait on changes to a request.
func (h *Hub) Waiting(requestID string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.changes[requestID])
}

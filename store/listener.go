package store

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Notification channels written by the schema's triggers.
const (
	ChannelChange = "countersign_change" // payload: request id
	ChannelReady  = "countersign_ready"  // an execution became ready
)

// Listener holds one LISTEN connection and fans notifications out to
// in-process subscribers. It only wakes waiters early; correctness never
// depends on a notification arriving, so waiters also re-read on timeout.
type Listener struct {
	db     *DB
	logger *slog.Logger

	mu      sync.Mutex
	changes map[string]map[chan struct{}]struct{}
	ready   map[chan struct{}]struct{}

	listening     chan struct{} // closed once the first LISTEN is in place
	listeningOnce sync.Once
}

// NewListener returns a Listener; Run starts it.
func NewListener(db *DB, logger *slog.Logger) *Listener {
	return &Listener{
		db:      db,
		logger:  logger,
		changes: make(map[string]map[chan struct{}]struct{}),
		ready:   make(map[chan struct{}]struct{}),

		listening: make(chan struct{}),
	}
}

// Listening is closed once notifications are being received.
func (l *Listener) Listening() <-chan struct{} { return l.listening }

// Run listens until ctx ends, reconnecting after a lost connection.
func (l *Listener) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := l.listen(ctx); err != nil && ctx.Err() == nil {
			l.logger.Warn("listen connection lost", slog.String("error", err.Error()))
			// Wake everyone so nobody waits on a notification that was lost.
			l.broadcast()
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (l *Listener) listen(ctx context.Context) error {
	pooled, err := l.db.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection carries LISTEN state; never hand it back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.Background())
	for _, ch := range []string{ChannelChange, ChannelReady} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	l.listeningOnce.Do(func() { close(l.listening) })
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case ChannelChange:
			l.notifyChange(n.Payload)
		case ChannelReady:
			l.notifyReady()
		}
	}
}

// SubscribeChange returns a channel signalled when the request changes, and a
// function that ends the subscription.
func (l *Listener) SubscribeChange(requestID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	subs := l.changes[requestID]
	if subs == nil {
		subs = make(map[chan struct{}]struct{})
		l.changes[requestID] = subs
	}
	subs[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(subs, ch)
		if len(subs) == 0 {
			delete(l.changes, requestID)
		}
		l.mu.Unlock()
	}
}

// SubscribeReady returns a channel signalled when an execution becomes ready.
func (l *Listener) SubscribeReady() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	l.mu.Lock()
	l.ready[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.ready, ch)
		l.mu.Unlock()
	}
}

func (l *Listener) notifyChange(requestID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.changes[requestID] {
		signal(ch)
	}
}

func (l *Listener) notifyReady() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch := range l.ready {
		signal(ch)
	}
}

func (l *Listener) broadcast() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, subs := range l.changes {
		for ch := range subs {
			signal(ch)
		}
	}
	for ch := range l.ready {
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
func (l *Listener) Waiting(requestID string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.changes[requestID])
}

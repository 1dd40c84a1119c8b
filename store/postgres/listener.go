package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/store"
)

// Notification channels: Notify and the batch statements send on them,
// the Listener listens on them.
const (
	channelChange = "countersign_change" // payload: request id
	channelReady  = "countersign_ready"  // an execution became ready
)

// Listener holds one LISTEN connection and fans notifications out to
// in-process subscribers. Waiters re-read only when woken, so a
// notification sent while the connection was down must not be missed:
// every time LISTEN is in place again, the Listener wakes every subscriber
// (Broadcast) to re-read what may have changed meanwhile.
type Listener struct {
	*store.Hub
	db     *Driver
	logger *slog.Logger

	listening     chan struct{} // closed once the first LISTEN is in place
	listeningOnce sync.Once

	startstop.Base // Start and Stop run run in the background
}

// newListener returns a Listener; Start starts it.
func newListener(db *Driver, logger *slog.Logger) *Listener {
	return &Listener{
		Hub:       store.NewHub(),
		db:        db,
		logger:    logger,
		listening: make(chan struct{}),
	}
}

// Listening is closed once notifications are being received.
func (l *Listener) Listening() <-chan struct{} { return l.listening }

// Start runs run in the background until Stop, not until ctx ends: waiters
// still finishing on shutdown need their wake-ups. Stop (the base's) ends
// it and waits for it to return.
func (l *Listener) Start(ctx context.Context) error {
	ctx, err := l.StartInit(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("starting the listener: %w", err)
	}
	ctx = l.UntilStopping(ctx)
	return l.Go(func() { l.run(ctx) })
}

// run listens until ctx ends, reconnecting after a lost connection.
func (l *Listener) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := l.listen(ctx); err != nil && ctx.Err() == nil {
			l.logger.Warn("listen connection lost", slog.String("error", err.Error()))
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
	for _, ch := range []string{channelChange, channelReady} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	l.listeningOnce.Do(func() { close(l.listening) })
	// Notifications sent before this LISTEN (while the last connection
	// was down, or before the first) reached no one: wake every waiter to
	// re-read, now that no later change can be missed.
	l.Broadcast()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		switch n.Channel {
		case channelChange:
			l.NotifyChange(n.Payload)
		case channelReady:
			l.NotifyReady()
		}
	}
}

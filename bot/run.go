package bot

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// DefaultDeliverInterval is how often the outbox loop looks for due
// deliveries.
const DefaultDeliverInterval = time.Second

// maxDeliverRounds bounds the batches one tick delivers, so a backlog drains
// without one tick running for ever.
const maxDeliverRounds = 20

// Start runs the outbox delivery loop and, when Config.Socket is set, Socket
// Mode, and returns. They stop when ctx ends or Stop is called.
func (b *Bot) Start(ctx context.Context) error {
	b.runMu.Lock()
	defer b.runMu.Unlock()
	if b.cancel != nil {
		return errors.New("bot already started")
	}
	ctx, b.cancel = context.WithCancel(ctx)
	b.loops.Go(func() { b.deliverLoop(ctx) })
	if b.socket != nil {
		b.loops.Go(func() {
			if err := b.RunSocketMode(ctx, b.socket); err != nil {
				b.logger.Error("socket mode stopped", slog.String("error", err.Error()))
			}
		})
		b.logger.Info("socket mode on")
	}
	return nil
}

// Stop ends what Start runs and waits, until ctx ends, for it and for the
// ephemeral answers still in flight.
func (b *Bot) Stop(ctx context.Context) error {
	b.runMu.Lock()
	if b.cancel != nil {
		b.cancel()
	}
	b.runMu.Unlock()
	done := make(chan struct{})
	go func() {
		b.loops.Wait()
		b.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return errors.New("slack answers still in flight at shutdown")
	}
}

// deliverLoop runs DeliverOnce every interval until ctx ends; a full batch
// is followed at once by the next, up to maxDeliverRounds per tick.
func (b *Bot) deliverLoop(ctx context.Context) {
	tick := time.NewTicker(b.deliverEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range maxDeliverRounds {
			n, err := b.DeliverOnce(ctx)
			if err != nil {
				if ctx.Err() == nil {
					b.logger.Error("outbox delivery failed", slog.String("error", err.Error()))
				}
				break
			}
			if n < b.batch {
				break
			}
		}
	}
}

// runState is what Start and Stop share.
type runState struct {
	runMu  sync.Mutex
	cancel context.CancelFunc
	loops  sync.WaitGroup
}

package bot

import (
	"context"
	"fmt"
	"log/slog"
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
	ctx, err := b.StartInit(ctx)
	if err != nil {
		return fmt.Errorf("starting the bot: %w", err)
	}
	ctx = b.UntilStopping(ctx) // neither loop has anything to finish
	if err := b.Go(func() { b.deliverLoop(ctx) }); err != nil {
		return err
	}
	if b.socket != nil {
		if err := b.Go(func() {
			if err := b.RunSocketMode(ctx, b.socket); err != nil {
				b.logger.Error("socket mode stopped", slog.String("error", err.Error()))
			}
		}); err != nil {
			return err
		}
		b.logger.Info("socket mode on")
	}
	return nil
}

// Stop ends what Start runs and waits for it and for the ephemeral answers
// still in flight; when ctx ends first, the answers' calls are cut off.
func (b *Bot) Stop(ctx context.Context) error {
	if err := b.Base.Stop(ctx); err != nil {
		return fmt.Errorf("stopping the bot: %w", err)
	}
	return nil
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

package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultDeliverInterval is how often the outbox loop looks for due
// deliveries.
const DefaultDeliverInterval = time.Second

// Start runs the outbox delivery loop and, when Config.Socket is set, Socket
// Mode, and returns. They stop when ctx ends or Stop is called.
func (b *Bot) Start(ctx context.Context) error {
	ctx, err := b.StartInit(ctx)
	if err != nil {
		return fmt.Errorf("starting the bot: %w", err)
	}
	ctx = b.UntilStopping(ctx) // neither loop has anything to finish
	if err := b.delivery.Start(ctx); err != nil {
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
	if err := errors.Join(b.delivery.Stop(ctx), b.Base.Stop(ctx)); err != nil {
		return fmt.Errorf("stopping the bot: %w", err)
	}
	return nil
}

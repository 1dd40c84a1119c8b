package bot

import (
	"context"
	"log/slog"
)

// convergeBatch bounds the deliveries one sweep queues.
const convergeBatch = 500

// ConvergeOnce queues an update for every card whose last render no longer
// matches the database (an update failed, was lost, or was never queued), and
// a post for pending rounds whose card never landed, so Slack converges on the
// database after outages and restarts. It returns how many it queued.
func (b *Bot) ConvergeOnce(ctx context.Context) (int, error) {
	n, err := b.db.EnqueueStaleCards(ctx, convergeBatch)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		b.metrics.Converged.Add(float64(n))
		b.logger.Info("cards queued to converge", slog.Int("count", n))
	}
	return n, nil
}

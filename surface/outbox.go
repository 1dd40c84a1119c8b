package surface

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
)

// outbox is the ledger's outbox as the delivery worker's queue.
type outbox struct{ d *Deliverer }

func (q outbox) Claim(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	rows, err := q.d.db.ClaimOutbox(ctx, limit, lease)
	q.d.previews.prefetch(rows) // every card's preview of the batch at once
	return rows, err
}

func (q outbox) Renew(ctx context.Context, held []store.OutboxRow, lease time.Duration) ([]store.OutboxRow, error) {
	ids := make([]int64, len(held))
	for i, row := range held {
		ids[i] = row.ID
	}
	return held, q.d.db.RenewOutbox(ctx, ids, lease)
}

func (q outbox) Attempts(row store.OutboxRow) int { return row.Attempts }

// Record writes a delivery's outcome on its row, with its metric and log.
func (q outbox) Record(ctx context.Context, row store.OutboxRow, o delivery.Outcome) error {
	d := q.d
	kind := string(row.Kind)
	log := d.logger.With(slog.Int64("outbox_id", row.ID), slog.String("kind", kind), slog.String("request_id", row.RequestID))
	count := func(outcome string) {
		if d.metrics.Deliveries != nil {
			d.metrics.Deliveries.WithLabelValues(kind, outcome).Inc()
		}
	}
	f := o.Fail
	switch {
	case o.Result == delivery.Delivered:
		count("delivered")
		return d.db.MarkOutboxDelivered(ctx, row.ID, o.Done.Note)
	case f.Class == delivery.Postponed:
		count("postponed")
		return d.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason})
	case f.Class == delivery.RateLimited:
		count("rate_limited")
		log.Warn("rate limited", slog.String("surface", row.Surface), slog.Duration("retry_after", o.Delay))
		return d.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason, Attempted: true})
	case o.Result == delivery.Failed:
		count("failed")
		if o.GaveUp {
			log.Error("delivery gave up", slog.Int("attempts", row.Attempts), slog.String("error", f.Reason))
		} else {
			log.Error("delivery failed for good", slog.String("error", f.Reason))
		}
		err := d.db.MarkOutboxFailed(ctx, row.ID, f.Reason)
		if as := d.surfacesOf(ctx, row); row.Kind == store.OutboxUpdateCard && errors.Is(f, ErrCardGone) && len(as) == 1 {
			// Someone deleted the card: stop the sweep from updating it for ever.
			err = errors.Join(err, d.db.MarkCardRendered(ctx, store.MarkCardRenderedParams{
				RequestID: row.RequestID, Round: row.Round, Surface: as[0].Name(), State: "message_not_found", Settled: true}))
		}
		return err
	}
	count("retry")
	log.Warn("delivery will be retried", slog.Int("attempts", row.Attempts), slog.String("error", f.Reason))
	return d.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason, Attempted: true})
}

package callback

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
)

// ClaimLease is how long a claimed delivery is left to its replica. It is
// short so that a dead replica's deliveries are sent by another within 10 s
// (the lease and a poll); a live replica renews it every third of it while
// the POST is in flight.
const ClaimLease = 8 * time.Second

// queue is the ledger's callbacks as the delivery worker's queue. A
// delivery's claim carries its lease, which fences a late outcome after a
// redrive: each renewal is the attempt's new lease.
type queue struct{ d *Deliverer }

func (q queue) Claim(ctx context.Context, limit int, lease time.Duration) ([]store.Callback, error) {
	return q.d.cfg.DB.ClaimCallbacks(ctx, limit, lease)
}

func (q queue) Renew(ctx context.Context, held []store.Callback, lease time.Duration) ([]store.Callback, error) {
	out := make([]store.Callback, len(held))
	var errs []error
	for i, c := range held {
		out[i] = c
		renewed, err := q.d.cfg.DB.RenewCallback(ctx, c, lease)
		switch {
		case errors.Is(err, store.ErrNotFound):
			// A redrive took the row over; the outcome will say so.
		case err != nil:
			errs = append(errs, err)
		default:
			out[i] = renewed
		}
	}
	return out, errors.Join(errs...)
}

func (q queue) Attempts(c store.Callback) int { return c.Attempts }

// Record writes an attempt's outcome on the delivery as last renewed.
func (q queue) Record(ctx context.Context, row store.Callback, o delivery.Outcome) error {
	logger := q.d.cfg.Logger.With(slog.String("request_id", row.RequestID), slog.String("delivery", row.DeliveryID),
		slog.String("event", string(row.Event)), slog.String("agent", row.Agent), slog.Int("attempt", row.Attempts))
	outcome := "delivered"
	if o.Result == delivery.Delivered {
		if err := q.d.cfg.DB.MarkCallbackDelivered(ctx, row, o.Done.Code); err != nil {
			logger.Warn("recording a callback delivery failed; it will be sent again", slog.String("error", err.Error()))
		}
		logger.Debug("callback delivered", slog.Int("status", o.Done.Code))
	} else {
		state, err := q.d.cfg.DB.RetryCallback(ctx, store.RetryCallbackParams{Claimed: row, Delay: o.Delay, Status: o.Fail.Code, Reason: o.Fail.Reason})
		outcome = "retry"
		switch {
		case errors.Is(err, store.ErrNotFound):
			logger.Info("callback attempt superseded: a redrive or a later claim sends it again")
		case err != nil:
			logger.Warn("recording a callback attempt failed; its lease brings it back", slog.String("error", err.Error()))
		case state == store.CallbackFailed:
			logger.Error("callback failed for good: its retry window has passed", slog.String("reason", o.Fail.Reason))
			outcome = "failed"
		default:
			logger.Info("callback not delivered; retrying", slog.String("reason", o.Fail.Reason))
		}
		if _, ok := (*q.d.targets.Load())[row.Agent]; !ok && outcome == "retry" {
			outcome = "unconfigured"
		}
	}
	if q.d.cfg.Metrics != nil {
		q.d.cfg.Metrics.Attempts.WithLabelValues(string(row.Event), outcome).Inc()
	}
	return nil
}

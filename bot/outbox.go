package bot

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/store"
)

// Retry policy for transient delivery errors (5xx, timeouts, lost connections).
const (
	backoffBase     = 2 * time.Second
	backoffMax      = 5 * time.Minute
	maxTransientTry = 40 // a few hours, mostly at the cap; then failed, and the sweep takes over
)

// transientErrors are Slack error codes worth retrying; every other ok:false
// answer (channel_not_found, not_in_channel, invalid_auth, …) will not change
// with a retry, so the row is failed with the code and the error is logged.
var transientErrors = []string{"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}

// reasonRateLimited is recorded on a row Slack refused with 429: its post
// certainly did not land.
const reasonRateLimited = "rate limited"

// errPermanent marks a delivery that can never be made (its request is gone).
var errPermanent = errors.New("permanent")

// classify reads a Slack call's error for the delivery worker.
func classify(err error) *delivery.Failure {
	// The Slack API URL is configurable; its words stay out of the row
	// and the log like every outbound call's.
	why := outbound.Describe(err)
	var f *delivery.Failure
	var rl *slack.RateLimitedError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &f):
		return f
	case errors.As(err, &rl):
		return &delivery.Failure{Class: delivery.RateLimited, Delay: max(rl.RetryAfter, time.Second), Reason: reasonRateLimited, Err: err}
	case errors.As(err, &se) && !slices.Contains(transientErrors, se.Err), errors.Is(err, errPermanent):
		return &delivery.Failure{Class: delivery.Permanent, Reason: why, Err: err}
	}
	return &delivery.Failure{Class: delivery.Transient, Reason: why, Err: err}
}

// outbox is the ledger's outbox as the delivery worker's queue.
type outbox struct{ b *Bot }

func (q outbox) Claim(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	return q.b.db.ClaimOutbox(ctx, limit, lease)
}

func (q outbox) Renew(ctx context.Context, held []store.OutboxRow, lease time.Duration) ([]store.OutboxRow, error) {
	ids := make([]int64, len(held))
	for i, row := range held {
		ids[i] = row.ID
	}
	return held, q.b.db.RenewOutbox(ctx, ids, lease)
}

func (q outbox) Attempts(row store.OutboxRow) int { return row.Attempts }

// Record writes a delivery's outcome on its row, with its metric and log.
func (q outbox) Record(ctx context.Context, row store.OutboxRow, o delivery.Outcome) error {
	b := q.b
	kind := string(row.Kind)
	log := b.logger.With(slog.Int64("outbox_id", row.ID), slog.String("kind", kind), slog.String("request_id", row.RequestID))
	f := o.Fail
	switch {
	case o.Result == delivery.Delivered:
		b.metrics.Deliveries.WithLabelValues(kind, "delivered").Inc()
		return b.db.MarkOutboxDelivered(ctx, row.ID, o.Done.Note)
	case f.Class == delivery.Postponed:
		b.metrics.Deliveries.WithLabelValues(kind, "postponed").Inc()
		return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason})
	case f.Class == delivery.RateLimited:
		b.metrics.Deliveries.WithLabelValues(kind, "rate_limited").Inc()
		log.Warn("slack rate limit", slog.Duration("retry_after", o.Delay))
		return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason, Attempted: true})
	case o.Result == delivery.Failed:
		b.metrics.Deliveries.WithLabelValues(kind, "failed").Inc()
		if o.GaveUp {
			log.Error("slack delivery gave up", slog.Int("attempts", row.Attempts), slog.String("error", f.Reason))
		} else {
			log.Error("slack delivery failed for good", slog.String("error", f.Reason))
		}
		err := b.db.MarkOutboxFailed(ctx, row.ID, f.Reason)
		var se slack.SlackErrorResponse
		if row.Kind == store.OutboxUpdateCard && errors.As(f.Err, &se) && se.Err == "message_not_found" {
			// Someone deleted the card: stop the sweep from updating it for ever.
			err = errors.Join(err, b.db.MarkCardRendered(ctx, store.MarkCardRenderedParams{
				RequestID: row.RequestID, Round: row.Round, State: "message_not_found", Settled: true}))
		}
		return err
	}
	b.metrics.Deliveries.WithLabelValues(kind, "retry").Inc()
	log.Warn("slack delivery will be retried", slog.Int("attempts", row.Attempts), slog.String("error", f.Reason))
	return b.db.RetryOutbox(ctx, store.RetryOutboxParams{ID: row.ID, Delay: o.Delay, Reason: f.Reason, Attempted: true})
}

// budget is the ledger's shared pacing as the Pacer's Budget.
type budget struct{ db Cards }

func (p budget) TakeSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error) {
	return p.db.TakePostSlot(ctx, channel, interval)
}

func (p budget) Pause(ctx context.Context, channel string, d time.Duration) error {
	return p.db.PauseChannel(ctx, channel, d)
}

func (p budget) PauseLeft(ctx context.Context, channel string) (time.Duration, error) {
	return p.db.ChannelPause(ctx, channel)
}

package embedded

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) (claimed []store.OutboxRow, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		rows, err := tx.QueryContext(ctx, q.Get("claim_outbox"),
			micros(tx.clock(nil)), lease.Microseconds(), limit)
		if err != nil {
			return wrap("claiming outbox", err)
		}
		claimed, err = collect(rows, func(row scanner) (store.OutboxRow, error) {
			var (
				o       store.OutboxRow
				raw     string
				created int64
			)
			if err := row.Scan(&o.ID, &o.Kind, &o.RequestID, &o.Round, &raw, &o.Attempts, &o.LastError, &created); err != nil {
				return store.OutboxRow{}, err
			}
			o.CreatedAt = fromMicros(created)
			var err error
			o.Data, err = decodeData(raw)
			return o, err
		})
		return wrap("claiming outbox", err)
	})
	return claimed, err
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return e.exec(ctx, "marking outbox delivered", q.Get("mark_outbox_delivered"), id, micros(clock(nil)), note)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return e.exec(ctx, "marking outbox failed", q.Get("mark_outbox_failed"), id, reason)
}

func (e executor) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	return e.exec(ctx, "rescheduling outbox", q.Get("retry_outbox"),
		id, micros(clock(nil).Add(delay)), inc, reason)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	var pending bool
	err := e.read().QueryRowContext(ctx, q.Get("post_pending"), canonicalID(requestID), round).Scan(&pending)
	return pending, wrap("reading outbox", err)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	var others bool
	err := e.read().QueryRowContext(ctx, q.Get("other_post_rows"), canonicalID(row.RequestID), row.Round, row.ID).Scan(&others)
	return others, wrap("reading outbox", err)
}

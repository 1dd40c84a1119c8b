package embedded

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) (claimed []store.OutboxRow, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		rows, err := tx.QueryContext(ctx, q.Get("claim_outbox"), micros(tx.clock(nil)), lease.Microseconds(), limit)
		claimed, err = collect("claiming outbox", func(row scanner) (store.OutboxRow, error) {
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
		}, rows, err)
		return err
	})
	return claimed, err
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return e.exec(ctx, "marking outbox delivered", q.Get("mark_outbox_delivered"), id, micros(clock(nil)), note)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return e.exec(ctx, "marking outbox failed", q.Get("mark_outbox_failed"), id, reason)
}

func (e executor) RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error {
	inc := -1
	if p.Attempted {
		inc = 0
	}
	return e.exec(ctx, "rescheduling outbox", q.Get("retry_outbox"),
		p.ID, micros(clock(nil).Add(p.Delay)), inc, p.Reason)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("post_pending"), canonicalID(requestID), round)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("other_post_rows"), canonicalID(row.RequestID), row.Round, row.ID)
}

package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	rows, err := e.tx.QueryContext(ctx, q.Get("claim_outbox"), micros(e.tx.now), lease.Microseconds(), limit)
	return collect("claiming outbox", func(row scanner) (store.OutboxRow, error) {
		var o store.OutboxRow
		return scanInto("reading outbox", row, &o, &o.ID, &o.Kind, &o.RequestID, &o.Round, &o.Surface, &o.Destination, jsonText{&o.Data}, &o.Attempts,
			&o.LastError, at{t: &o.CreatedAt})
	}, rows, err)
}

func (e executor) RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	return e.tx.exec(ctx, "renewing outbox claims", q.Get("renew_outbox"), micros(e.tx.now), lease.Microseconds(), string(list))
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return e.tx.exec(ctx, "marking outbox delivered", q.Get("mark_outbox_delivered"), id, micros(e.tx.now), note)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return e.tx.exec(ctx, "marking outbox failed", q.Get("mark_outbox_failed"), id, reason)
}

func (e executor) RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error {
	inc := -1
	if p.Attempted {
		inc = 0
	}
	return e.tx.exec(ctx, "rescheduling outbox", q.Get("retry_outbox"), p.ID, micros(e.tx.now.Add(p.Delay)), inc, p.Reason)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("post_pending"), canonicalID(requestID), round,
		string(store.OutboxPostCard))
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("other_post_rows"), canonicalID(row.RequestID), row.Round, row.ID,
		string(store.OutboxPostCard), row.Surface)
}

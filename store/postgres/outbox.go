package postgres

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	rows, err := e.db.Query(ctx, q.Get("claim_outbox"),
		limit, lease.Microseconds())
	return collect[store.OutboxRow]("claiming outbox", rows, err)
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	_, err := e.db.Exec(ctx, q.Get("mark_outbox_delivered"), id, note)
	return wrap("marking outbox delivered", err)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	_, err := e.db.Exec(ctx, q.Get("mark_outbox_failed"), id, reason)
	return wrap("marking outbox failed", err)
}

func (e executor) RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error {
	inc := -1
	if p.Attempted {
		inc = 0
	}
	_, err := e.db.Exec(ctx, q.Get("retry_outbox"),
		p.ID, p.Delay.Microseconds(), inc, p.Reason)
	return wrap("rescheduling outbox", err)
}

func (e executor) RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error {
	_, err := e.db.Exec(ctx, q.Get("renew_outbox"), ids, lease.Microseconds())
	return wrap("renewing outbox claims", err)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("post_pending"), requestID, round, string(store.OutboxPostCard))
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("other_post_rows"), row.RequestID, row.Round, row.ID,
		string(store.OutboxPostCard), row.Surface)
}

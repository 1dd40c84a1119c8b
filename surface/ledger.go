package surface

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

// Ledger is the ledger's delivery side the Deliverer works (a
// store.Store): the outbox rows it delivers, the cards it records, the
// shared pacing, and what a card shows.
type Ledger interface {
	Cards
	PreviewLedger
	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error)
	RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error
	FanOutOutbox(ctx context.Context, row store.OutboxRow, surfaces []string) error
	PostPending(ctx context.Context, requestID string, round int) (bool, error)
	OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error)
	CardFor(ctx context.Context, requestID string, round int, surface string) (store.Card, error)
	RecordCard(ctx context.Context, c store.Card) (store.Card, error)
	MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error
	TakePostSlot(ctx context.Context, lane store.Lane, interval time.Duration) (time.Duration, error)
	PauseLane(ctx context.Context, lane store.Lane, d time.Duration) error
	LanePause(ctx context.Context, lane store.Lane) (time.Duration, error)
}

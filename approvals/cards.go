package approvals

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

// Cards is the delivery side of review: the outbox rows a surface delivers,
// the cards it records, and what a card shows. It is all a Slack surface
// may read or write in the ledger besides the Service's decisions.
type Cards struct{ CardStore }

// CardStore is the part of store.Store behind Cards, and what a surface that
// delivers cards depends on.
type CardStore interface {
	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error)
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, p store.RetryOutboxParams) error
	PostPending(ctx context.Context, requestID string, round int) (bool, error)
	OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error)
	EnqueueStaleCards(ctx context.Context, limit int) (int, error)
	CardFor(ctx context.Context, requestID string, round int) (store.Card, error)
	RecordCard(ctx context.Context, c store.Card) (store.Card, error)
	MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error
	CardState(ctx context.Context, requestID string, round int) (string, error)
	RequestByID(ctx context.Context, id string) (store.Request, error)
	DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error)
	ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error)
	VotesFor(ctx context.Context, requestID string, round int) ([]store.Vote, error)
}

// NewCards returns the card and outbox service over db.
func NewCards(db store.Store) *Cards { return &Cards{db} }

package store

import (
	"context"
	"log/slog"
	"time"
)

// Store is the ledger as the rest of countersign sees it. Ledger implements
// it on any Driver: store/postgres for production, store/embedded (SQLite)
// for a one-command local run, both held to store/drivertest's contract.
// Each method is one atomic unit: where it writes several rows (a decision
// with its execution, audit event and outbox row), they commit together or
// not at all.
type Store interface {
	Migrate(ctx context.Context, logger *slog.Logger) (int, error)
	Ping(ctx context.Context) error
	Close()

	// Intake.
	Intake(ctx context.Context, key string, build func() (NewRequest, error),
		insert func(context.Context, NewRequest) (InsertResult, error)) (InsertResult, error)
	InsertRequest(ctx context.Context, p NewRequest) (req Request, inserted bool, err error)
	InsertRequests(ctx context.Context, ps []NewRequest, now *time.Time) ([]InsertResult, error)
	ReplayRequest(ctx context.Context, key string) (req Request, postQueued bool, err error)
	RedriveCard(ctx context.Context, requestID string) error
	RequestByKey(ctx context.Context, key string) (Request, error)
	RequestByID(ctx context.Context, id string) (Request, error)
	RequestByRef(ctx context.Context, ref string) (Request, error)
	CancelRequest(ctx context.Context, id, actor string, now *time.Time) (req Request, cancelled bool, err error)
	ExpireDue(ctx context.Context, now *time.Time, limit int) ([]Request, error)
	SetCard(ctx context.Context, id, channel, ts string) error

	// Review.
	Decide(ctx context.Context, p DecideParams) (req Request, d Decision, decided bool, err error)
	Vote(ctx context.Context, p VoteParams) (VoteResult, error)
	VotesFor(ctx context.Context, requestID string, round int) ([]Vote, error)
	DecisionFor(ctx context.Context, requestID string, round int) (Decision, error)
	LatestDecision(ctx context.Context, requestID string) (Decision, error)
	AppendEvent(ctx context.Context, e Event) error
	EventsFor(ctx context.Context, requestID string) ([]Event, error)

	// Execution.
	LatestExecution(ctx context.Context, requestID string) (Execution, error)
	ExecutionsFor(ctx context.Context, requestID string) ([]Execution, error)
	ExecutionForDecision(ctx context.Context, decisionID int64) (Execution, error)
	ClaimExecutions(ctx context.Context, p ClaimParams) ([]Claim, error)
	TransitionExecutions(ctx context.Context, p TransitionParams, ts []Transition) ([]Applied, error)
	Supersede(ctx context.Context, p SupersedeParams) (newRound int, superseded bool, err error)
	Resolve(ctx context.Context, p ResolveParams) (resolved bool, err error)
	ExpireClaims(ctx context.Context, now *time.Time, limit int) (int, error)
	LeaseUnknowns(ctx context.Context, now *time.Time, lease time.Duration, limit int) ([]Unknown, error)
	CountUnsettled(ctx context.Context) (unknown, needsReview int, err error)

	// Cards and their delivery.
	EnqueueOutbox(ctx context.Context, kind OutboxKind, requestID string, round int, data map[string]any, at time.Time) error
	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]OutboxRow, error)
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error
	PostPending(ctx context.Context, requestID string, round int) (bool, error)
	OtherPostRows(ctx context.Context, row OutboxRow) (bool, error)
	CardFor(ctx context.Context, requestID string, round int) (Card, error)
	RecordCard(ctx context.Context, c Card) (Card, error)
	MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error
	CardState(ctx context.Context, requestID string, round int) (string, error)
	EnqueueStaleCards(ctx context.Context, limit int) (int, error)

	// Agent callbacks and their delivery.
	ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]Callback, error)
	MarkCallbackDelivered(ctx context.Context, claimed Callback, status int) error
	RetryCallback(ctx context.Context, claimed Callback, delay time.Duration, status int, reason string) (CallbackState, error)
	LatestCallback(ctx context.Context, requestID string) (Callback, error)
	RedriveCallback(ctx context.Context, requestID string) (Callback, bool, error)
	CountCallbackBacklog(ctx context.Context) (int, error)

	// Lookups for support engineers.
	RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]Request, error)
	RequestsByEffectString(ctx context.Context, value string, limit int) ([]Request, error)
	PendingRequests(ctx context.Context, limit int) ([]Request, error)
	RecentlyDecided(ctx context.Context, limit int) ([]Request, error)
	UnresolvedExecutions(ctx context.Context, limit int) ([]Unresolved, error)

	// Reminders and escalations of pending requests.
	DueNudges(ctx context.Context, p DueNudgesParams) ([]Request, error)
	QueueNudges(ctx context.Context, nudges []NewNudge) ([]NewNudge, error)
	NudgeQueued(ctx context.Context, requestID string, round int, kind NudgeKind) (bool, error)
	PendingByTool(ctx context.Context) ([]PendingTool, error)
}

// Notifier wakes waiters when something they wait for may have changed. A
// wake is a hint to re-read, never the data itself: waiters re-read the store.
type Notifier interface {
	// SubscribeChange wakes on any change to one request; call cancel when done.
	SubscribeChange(requestID string) (wake <-chan struct{}, cancel func())
	// SubscribeReady wakes when an execution may have become ready to claim.
	SubscribeReady() (wake <-chan struct{}, cancel func())
}

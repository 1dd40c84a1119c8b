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
	// Reader is every read, answered by the driver itself.
	Reader

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
	RequestByRef(ctx context.Context, ref string) (Request, error)
	CancelRequest(ctx context.Context, id, actor string, now *time.Time) (req Request, cancelled bool, err error)
	ExpireDue(ctx context.Context, now *time.Time, limit int) ([]Request, error)
	SetCard(ctx context.Context, id, surface, ref string) error

	// Review.
	Decide(ctx context.Context, p DecideParams) (req Request, d Decision, decided bool, err error)
	Vote(ctx context.Context, p VoteParams) (VoteResult, error)
	Edit(ctx context.Context, p EditParams) (EditResult, error)
	AppendEvent(ctx context.Context, e Event) error
	// RevokeGrant ends a live standing grant (see Ledger.RevokeGrant).
	RevokeGrant(ctx context.Context, p RevokeGrantParams) (g Grant, revoked bool, err error)

	// Execution.
	ClaimExecutions(ctx context.Context, p ClaimParams) ([]Claim, error)
	TransitionExecutions(ctx context.Context, p TransitionParams, ts []Transition) ([]Applied, error)
	Supersede(ctx context.Context, p SupersedeParams) (newRound int, superseded bool, err error)
	Resolve(ctx context.Context, p ResolveParams) (resolved bool, err error)
	// MarkRestored records a restore of the database from a copy (see
	// Executor.MarkRestored).
	MarkRestored(ctx context.Context, p RestoreParams) (Restore, error)
	ExpireClaims(ctx context.Context, now *time.Time, limit int) (int, error)
	LeaseUnknowns(ctx context.Context, p LeaseUnknownsParams) ([]Unknown, error)
	// ReportOutcome and ExpireOutcomes are agent-executed writes' (see
	// Ledger.ReportOutcome).
	ReportOutcome(ctx context.Context, p OutcomeParams) (recorded bool, err error)
	ExpireOutcomes(ctx context.Context, timeouts map[string]time.Duration, now time.Time, limit int) (int, error)

	// Cards and their delivery.
	EnqueueOutbox(ctx context.Context, kind OutboxKind, requestID string, round int, data map[string]any, at time.Time) error
	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]OutboxRow, error)
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, p RetryOutboxParams) error
	RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error
	FanOutOutbox(ctx context.Context, row OutboxRow, surfaces []string) error
	TakePostSlot(ctx context.Context, lane Lane, interval time.Duration) (time.Duration, error)
	PauseLane(ctx context.Context, lane Lane, d time.Duration) error
	LanePause(ctx context.Context, lane Lane) (time.Duration, error)
	CountSurfaceAttempt(ctx context.Context, a SurfaceAttempt) (int, error)
	SurfaceAttempts(ctx context.Context, surface, key string) (int, error)
	RecordCard(ctx context.Context, c Card) (Card, error)
	MarkCardRendered(ctx context.Context, p MarkCardRenderedParams) error
	// Previews: what a write changes, asked of its tool once.
	ClaimPreview(ctx context.Context, p ClaimPreviewParams) (claimed bool, err error)
	RecordPreview(ctx context.Context, p Preview) (recorded bool, err error)
	EnqueueStaleCards(ctx context.Context, limit int) (int, error)

	// Agent callbacks and their delivery.
	ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]Callback, error)
	MarkCallbackDelivered(ctx context.Context, claimed Callback, status int) error
	RetryCallback(ctx context.Context, p RetryCallbackParams) (CallbackState, error)
	RenewCallback(ctx context.Context, claimed Callback, lease time.Duration) (Callback, error)
	RedriveCallback(ctx context.Context, requestID string) (Callback, bool, error)

	// Lookups for support engineers.
	UnresolvedExecutions(ctx context.Context, limit int) ([]Unresolved, error)

	// Reminders and escalations of pending requests.
	QueueNudges(ctx context.Context, nudges []NewNudge) ([]NewNudge, error)

	// Retention: settled requests leave, their keys stay as tombstones.
	Prune(ctx context.Context, p PruneParams) (int, error)
	// VerifyAudit walks the audit chains (see AuditEvent).
	VerifyAudit(ctx context.Context) (AuditReport, error)
	// AnchorAudit verifies the audit chains and hands emit each one's head
	// (see AuditHead); VerifyAuditAnchor verifies them against an anchor.
	AnchorAudit(ctx context.Context, emit func(AuditHead) error) (AuditAnchor, AuditReport, error)
	VerifyAuditAnchor(ctx context.Context, a Anchor) (AuditReport, error)
	// The audit trail leaves by whole months, each leaving a checkpoint.
	PrepareAuditMonths(ctx context.Context) (int, error)
	DropAudit(ctx context.Context, before time.Time) (int, error)
}

// Notifier wakes waiters when something they wait for may have changed. A
// wake is a hint to re-read, never the data itself: waiters re-read the store.
type Notifier interface {
	// SubscribeChange wakes on any change to one request; call cancel when done.
	SubscribeChange(requestID string) (wake <-chan struct{}, cancel func())
	// SubscribeReady wakes when an execution may have become ready to claim.
	SubscribeReady() (wake <-chan struct{}, cancel func())
}

// Service is a long-running part on the start/stop base
// (internal/startstop): Start runs it and returns, Stop ends it and waits
// for everything it started.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// ChangeCaller is a Notifier that can also call a function on a change,
// for a waiter that holds no goroutine (a parked long-poll).
type ChangeCaller interface {
	// OnChange calls wake on every change to one request and on every
	// broadcast, on the goroutine that notifies and while it holds the
	// notifier's lock: wake must return at once and must not call the
	// notifier. Call cancel when done.
	OnChange(requestID string, wake func()) (cancel func())
}

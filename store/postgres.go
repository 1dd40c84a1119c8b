package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The methods below make DB a Store. Each runs the package function of the
// same name on the pool, or in one transaction where the unit writes several
// rows; the functions stay exported for callers that compose their own
// transactions (tests, benchmarks).

var _ Store = (*DB)(nil)

func (db *DB) InsertRequest(ctx context.Context, p NewRequest) (Request, bool, error) {
	return InsertRequest(ctx, db.Pool, p)
}

func (db *DB) InsertRequests(ctx context.Context, ps []NewRequest, now *time.Time) ([]InsertResult, error) {
	return InsertRequests(ctx, db.Pool, ps, now)
}

func (db *DB) ReplayRequest(ctx context.Context, key string) (Request, bool, error) {
	return ReplayRequest(ctx, db.Pool, key)
}

func (db *DB) RedriveCard(ctx context.Context, requestID string) error {
	return RedriveCard(ctx, db.Pool, requestID)
}

func (db *DB) RequestByKey(ctx context.Context, key string) (Request, error) {
	return RequestByKey(ctx, db.Pool, key)
}

func (db *DB) RequestByID(ctx context.Context, id string) (Request, error) {
	return RequestByID(ctx, db.Pool, id)
}

func (db *DB) RequestByRef(ctx context.Context, ref string) (Request, error) {
	return RequestByRef(ctx, db.Pool, ref)
}

func (db *DB) CancelRequest(ctx context.Context, id, actor string, now *time.Time) (Request, bool, error) {
	return CancelRequest(ctx, db.Pool, id, actor, now)
}

func (db *DB) ExpireDue(ctx context.Context, now *time.Time, limit int) ([]Request, error) {
	return ExpireDue(ctx, db.Pool, now, limit)
}

func (db *DB) SetCard(ctx context.Context, id, channel, ts string) error {
	return SetCard(ctx, db.Pool, id, channel, ts)
}

func (db *DB) Decide(ctx context.Context, p DecideParams) (req Request, d Decision, decided bool, err error) {
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		req, d, decided, err = DecideTx(ctx, tx, p)
		return err
	})
	return req, d, decided, err
}

func (db *DB) DecisionFor(ctx context.Context, requestID string, round int) (Decision, error) {
	return DecisionFor(ctx, db.Pool, requestID, round)
}

func (db *DB) LatestDecision(ctx context.Context, requestID string) (Decision, error) {
	return LatestDecision(ctx, db.Pool, requestID)
}

func (db *DB) AppendEvent(ctx context.Context, e Event) error {
	return AppendEventTx(ctx, db.Pool, e)
}

func (db *DB) EventsFor(ctx context.Context, requestID string) ([]Event, error) {
	return EventsFor(ctx, db.Pool, requestID)
}

func (db *DB) LatestExecution(ctx context.Context, requestID string) (Execution, error) {
	return LatestExecution(ctx, db.Pool, requestID)
}

func (db *DB) ExecutionsFor(ctx context.Context, requestID string) ([]Execution, error) {
	return ExecutionsFor(ctx, db.Pool, requestID)
}

func (db *DB) ExecutionForDecision(ctx context.Context, decisionID int64) (Execution, error) {
	return ExecutionForDecision(ctx, db.Pool, decisionID)
}

func (db *DB) ClaimExecutions(ctx context.Context, p ClaimParams) ([]Claim, error) {
	return ClaimExecutions(ctx, db.Pool, p)
}

// TransitionExecutions applies the batch in one transaction. With
// p.AsyncCommit it commits without waiting for the WAL flush (see
// TransitionParams).
func (db *DB) TransitionExecutions(ctx context.Context, p TransitionParams, ts []Transition) (applied []Applied, err error) {
	if !p.AsyncCommit {
		return TransitionExecutions(ctx, db.Pool, p, ts)
	}
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
			return err
		}
		applied, err = TransitionExecutions(ctx, tx, p, ts)
		return err
	})
	return applied, err
}

func (db *DB) Supersede(ctx context.Context, p SupersedeParams) (newRound int, superseded bool, err error) {
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		newRound, superseded, err = SupersedeTx(ctx, tx, p)
		return err
	})
	return newRound, superseded, err
}

func (db *DB) Resolve(ctx context.Context, p ResolveParams) (resolved bool, err error) {
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		resolved, err = ResolveTx(ctx, tx, p)
		return err
	})
	return resolved, err
}

func (db *DB) ExpireClaims(ctx context.Context, now *time.Time, limit int) (int, error) {
	return ExpireClaims(ctx, db.Pool, now, limit)
}

func (db *DB) LeaseUnknowns(ctx context.Context, now *time.Time, lease time.Duration, limit int) ([]Unknown, error) {
	return LeaseUnknowns(ctx, db.Pool, now, lease, limit)
}

func (db *DB) CountUnsettled(ctx context.Context) (int, int, error) {
	return CountUnsettled(ctx, db.Pool)
}

func (db *DB) EnqueueOutbox(ctx context.Context, kind OutboxKind, requestID string, round int, data map[string]any, at time.Time) error {
	return EnqueueOutboxTx(ctx, db.Pool, kind, requestID, round, data, at)
}

func (db *DB) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]OutboxRow, error) {
	return ClaimOutbox(ctx, db.Pool, limit, lease)
}

func (db *DB) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return MarkOutboxDelivered(ctx, db.Pool, id, note)
}

func (db *DB) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return MarkOutboxFailed(ctx, db.Pool, id, reason)
}

func (db *DB) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	return RetryOutbox(ctx, db.Pool, id, delay, reason, attempted)
}

func (db *DB) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	return PostPending(ctx, db.Pool, requestID, round)
}

func (db *DB) OtherPostRows(ctx context.Context, row OutboxRow) (bool, error) {
	return OtherPostRows(ctx, db.Pool, row)
}

func (db *DB) CardFor(ctx context.Context, requestID string, round int) (Card, error) {
	return CardFor(ctx, db.Pool, requestID, round)
}

func (db *DB) RecordCard(ctx context.Context, c Card) (Card, error) {
	return RecordCard(ctx, db.Pool, c)
}

func (db *DB) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	return MarkCardRendered(ctx, db.Pool, requestID, round, state, settled)
}

func (db *DB) CardState(ctx context.Context, requestID string, round int) (string, error) {
	return CardState(ctx, db.Pool, requestID, round)
}

func (db *DB) EnqueueStaleCards(ctx context.Context, limit int) (int, error) {
	return EnqueueStaleCards(ctx, db.Pool, limit)
}

func (db *DB) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]Request, error) {
	return RequestsByKeyPrefix(ctx, db.Pool, prefix, limit)
}

func (db *DB) RequestsByEffectString(ctx context.Context, value string, limit int) ([]Request, error) {
	return RequestsByEffectString(ctx, db.Pool, value, limit)
}

func (db *DB) PendingRequests(ctx context.Context, limit int) ([]Request, error) {
	return PendingRequests(ctx, db.Pool, limit)
}

func (db *DB) RecentlyDecided(ctx context.Context, limit int) ([]Request, error) {
	return RecentlyDecided(ctx, db.Pool, limit)
}

func (db *DB) UnresolvedExecutions(ctx context.Context, limit int) ([]Unresolved, error) {
	return UnresolvedExecutions(ctx, db.Pool, limit)
}

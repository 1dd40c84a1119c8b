package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/internal/mutant"
)

// Ledger is the Store on any Driver: every transition's rules (its
// conditions, its audit event, its outbox rows, in one transaction) are
// written here once, from the driver's single-statement primitives. Its
// reads are the driver's own (Reader, promoted): a read has no rule to add.
type Ledger struct {
	reader
	driver Driver
	// callbacks names the agents whose requests queue callbacks.
	callbacks atomic.Pointer[callbackAgents]
	// insertFirst sends intake straight to the insert (Intake), but for
	// the keys hot holds.
	insertFirst bool
	hot         hotKeys
	staleCards  StaleCardsParams
}

var _ Store = (*Ledger)(nil)

// reader names the Ledger's embedded Reader without exporting the field.
type reader = Reader

// Options are the ledger's knobs; the zero value is the defaults.
type Options struct {
	// CallbackAgents names the agents whose requests queue callbacks (see
	// SetCallbackAgents).
	CallbackAgents []string
	// CardRetryAfter is how long a failed card delivery keeps the
	// convergence sweep from queueing the same card again (zero: ten
	// minutes), and CardUnpostedAfter how long a pending round may go
	// without a card before the sweep posts one (zero: a minute).
	CardRetryAfter    time.Duration
	CardUnpostedAfter time.Duration
}

// Defaults of Options.
const (
	DefaultCardRetryAfter    = 10 * time.Minute
	DefaultCardUnpostedAfter = time.Minute
)

// NewLedger returns the Store on d, configured by opts and by what d says
// of itself: on a remote database intake inserts first (see Intake).
func NewLedger(d Driver, opts Options) *Ledger {
	l := &Ledger{reader: d.Reader(), driver: d, insertFirst: d.Remote(), staleCards: StaleCardsParams{
		RetryAfter:    cmp.Or(opts.CardRetryAfter, DefaultCardRetryAfter),
		UnpostedAfter: cmp.Or(opts.CardUnpostedAfter, DefaultCardUnpostedAfter),
		UpdateKind:    OutboxUpdateCard,
		PostKind:      OutboxPostCard,
		Data:          map[string]any{"reason": OutboxReasonConverge},
	}}
	if opts.CallbackAgents != nil {
		l.SetCallbackAgents(opts.CallbackAgents...)
	}
	return l
}

// OutboxReasonConverge marks a delivery the convergence sweep queued.
const OutboxReasonConverge = "converge"

// Driver returns the database the ledger runs on.
func (l *Ledger) Driver() Driver { return l.driver }

// alone returns what fn, one primitive that stands alone, returns from
// Driver.Write: no transaction around it where the statement commits by
// itself (PostgreSQL), one where every write needs one (SQLite). A
// primitive that returns only an error calls Driver.Write itself.
func alone[T any](ctx context.Context, l *Ledger, fn func(Executor) (T, error)) (out T, err error) {
	err = l.driver.Write(ctx, func(ex Executor) error {
		out, err = fn(ex)
		return err
	})
	return out, err
}

// Migrate applies the driver's pending migrations.
func (l *Ledger) Migrate(ctx context.Context, logger *slog.Logger) (int, error) {
	return l.driver.Migrate(ctx, logger)
}

// Ping reports whether the database answers.
func (l *Ledger) Ping(ctx context.Context) error { return l.driver.Ping(ctx) }

// Close closes the database.
func (l *Ledger) Close() { l.driver.Close() }

// inTx runs fn in one durable transaction.
func (l *Ledger) inTx(ctx context.Context, fn func(Executor) error) error {
	return l.driver.InTx(ctx, true, fn)
}

// write appends events and outbox rows in the caller's transaction.
func write(ctx context.Context, ex Executor, events []Event, outbox []NewOutbox) error {
	if len(events) > 0 {
		if err := ex.InsertEvents(ctx, events); err != nil {
			return err
		}
	}
	if len(outbox) > 0 {
		return ex.InsertOutbox(ctx, outbox)
	}
	return nil
}

func updateCard(requestID string, round int, at time.Time) NewOutbox {
	o := cardUpdate()
	o.RequestID, o.Round, o.At = requestID, round, at
	return o
}

// cardUpdate is a card update owed by a change: one waiting unsent already
// will show the change, so it coalesces into that one.
func cardUpdate() NewOutbox { return NewOutbox{Kind: OutboxUpdateCard, Coalesce: true} }

// InsertRequest stores a new request with its "requested" audit event and the
// outbox row that posts its card, or returns the request the key already
// names (inserted false).
func (l *Ledger) InsertRequest(ctx context.Context, p NewRequest) (Request, bool, error) {
	results, err := l.InsertRequests(ctx, []NewRequest{p}, p.Now)
	if err != nil {
		return Request{}, false, err
	}
	return results[0].Request, results[0].Inserted, nil
}

// InsertRequests stores new requests, each with its audit event and card
// post, in one commit, and returns one result per request in order; a key
// that exists already is returned and writes nothing. now, when set, is the
// creation time of every request.
func (l *Ledger) InsertRequests(ctx context.Context, ps []NewRequest, now *time.Time) ([]InsertResult, error) {
	ps = append([]NewRequest(nil), ps...)
	for i, p := range ps {
		if !json.Valid(p.Step) {
			return nil, fmt.Errorf("inserting requests: step of %s is not JSON", p.Key)
		}
		if p.EffectStrings == nil {
			var err error
			if ps[i].EffectStrings, err = EffectStrings(p.Snapshot); err != nil {
				return nil, fmt.Errorf("inserting requests: key %s: %w", p.Key, err)
			}
		}
	}
	owed := make([]Owed, len(ps))
	for i, p := range ps {
		owed[i] = requested(p)
	}
	// A prune that commits while an insert waits on the row it deletes
	// makes the insert fail with a conflict (the key was pruned under it)
	// and rolls the whole write back; the write is asked again, and sees
	// the tombstone. A key can be pruned under one write only once.
	for attempt := 1; ; attempt++ {
		results, err := l.insertRequests(ctx, ps, owed, now)
		if !errors.Is(err, ErrConflict) || attempt == insertAttempts {
			return results, err
		}
	}
}

// insertAttempts bounds how often InsertRequests asks again after a
// conflict: once per prune that can commit under it, and one more.
const insertAttempts = 3

// insertRequests is one attempt of InsertRequests.
func (l *Ledger) insertRequests(ctx context.Context, ps []NewRequest, owed []Owed, now *time.Time) ([]InsertResult, error) {
	if b := l.driver.Batch(); b != nil {
		return b.InsertRequestsBatch(ctx, ps, owed, now)
	}
	var results []InsertResult
	err := l.inTx(ctx, func(ex Executor) error {
		results = make([]InsertResult, len(ps))
		var o owing
		for i, p := range ps {
			req, inserted, err := ex.InsertRequest(ctx, p, now)
			if err == nil && !inserted {
				results[i], err = existing(ctx, ex, p.Key)
			}
			if err != nil {
				return fmt.Errorf("inserting requests: %w", err)
			}
			if inserted {
				results[i] = InsertResult{Request: req, Inserted: true}
				o.add(owed[i], req.ID, req.Round, req.CreatedAt)
			}
		}
		return o.write(ctx, ex)
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// insertDecided stores a request decided at intake (p.Decided) and its
// decision in one transaction: the request, its "requested" event, then the
// decision as Decide writes it (the execution of an approval, the callback
// of a denial, the audit event). A key that exists is answered as
// InsertRequests answers it, and nothing is written.
func (l *Ledger) insertDecided(ctx context.Context, p NewRequest) (InsertResult, error) {
	if !json.Valid(p.Step) {
		return InsertResult{}, fmt.Errorf("inserting requests: step of %s is not JSON", p.Key)
	}
	if p.EffectStrings == nil {
		var err error
		if p.EffectStrings, err = EffectStrings(p.Snapshot); err != nil {
			return InsertResult{}, fmt.Errorf("inserting requests: key %s: %w", p.Key, err)
		}
	}
	d := *p.Decided
	var res InsertResult
	for attempt := 1; ; attempt++ { // as InsertRequests, after a prune's conflict
		err := l.inTx(ctx, func(ex Executor) error {
			req, inserted, err := ex.InsertRequest(ctx, p, p.Now)
			if err != nil {
				return fmt.Errorf("inserting requests: %w", err)
			}
			if !inserted {
				res, err = existing(ctx, ex, p.Key)
				return err
			}
			// A grant revoked since intake read it decides nothing: the
			// request is stored as asked, with its card.
			stored := p
			if d.Grant != "" {
				live, err := ex.HoldGrant(ctx, d.Grant, p.Now)
				if err != nil {
					return fmt.Errorf("inserting requests: holding grant %s: %w", d.Grant, err)
				}
				if !live {
					stored.Decided = nil
				}
			}
			var o owing
			o.add(requested(stored), req.ID, req.Round, req.CreatedAt)
			if err := o.write(ctx, ex); err != nil {
				return err
			}
			if stored.Decided == nil {
				res = InsertResult{Request: req, Inserted: true}
				return nil
			}
			req, _, decided, err := l.decideTx(ctx, ex, DecideParams{RequestID: req.ID, Round: req.Round,
				PayloadHash: req.PayloadHash, Verdict: d.Verdict, DecidedBy: d.DecidedBy, Via: d.Via,
				Reason: d.Reason, MaxAttempts: d.MaxAttempts, Now: p.Now, data: d.Data, noCard: !d.Card})
			if err != nil {
				return err
			}
			if !decided { // a request is pending when it is stored: only a bug lands here
				return fmt.Errorf("inserting requests: %s was stored but could not be decided", p.Key)
			}
			res = InsertResult{Request: req, Inserted: true}
			return nil
		})
		if !errors.Is(err, ErrConflict) || attempt == insertAttempts {
			return res, err
		}
	}
}

// existing reads what a key that was not inserted names: its request, or
// the tombstone it left when it was pruned.
func existing(ctx context.Context, ex Executor, key string) (InsertResult, error) {
	found, err := ex.ReplayRequests(ctx, []string{key})
	if err != nil {
		return InsertResult{}, err
	}
	if r, ok := found[key]; ok {
		return InsertResult{Request: r.Request, PostQueued: r.PostQueued}, nil
	}
	tombs, err := ex.Tombstones(ctx, []string{key})
	if err != nil {
		return InsertResult{}, err
	}
	if t, ok := tombs[key]; ok {
		return InsertResult{Pruned: &t}, nil
	}
	return InsertResult{}, ErrNotFound
}

// Intake stores the request build returns under key, or returns the request
// key already names (Inserted false, with PostQueued as ReplayRequest says).
// On an in-process store it reads the key first: a replay never waits for
// the single writer, and build is not called for it. On a remote store it
// inserts first and learns of a replay from the key's conflict, one round
// trip for a new intent; but a key this process stored or answered lately
// (hotKeys) is read first, so that a retry storm costs reads, not writes.
// insert, when set, stores the request (an IntakeBatcher's Insert); nil
// stores it alone.
func (l *Ledger) Intake(ctx context.Context, key string, build func() (NewRequest, error),
	insert func(context.Context, NewRequest) (InsertResult, error)) (InsertResult, error) {
	if !l.insertFirst || l.hot.has(key) {
		req, postQueued, err := l.ReplayRequest(ctx, key)
		switch {
		case err == nil:
			return InsertResult{Request: req, PostQueued: postQueued}, nil
		case !errors.Is(err, ErrNotFound):
			return InsertResult{}, err
		}
	}
	p, err := build()
	if err != nil {
		return InsertResult{}, err
	}
	var res InsertResult
	switch {
	case p.Decided != nil:
		res, err = l.insertDecided(ctx, p)
	case insert != nil:
		res, err = insert(ctx, p)
	default:
		var rs []InsertResult
		if rs, err = l.InsertRequests(ctx, []NewRequest{p}, p.Now); err == nil {
			res = rs[0]
		}
	}
	if err == nil && res.Pruned == nil && l.insertFirst {
		l.hot.add(key)
	}
	return res, err
}

// ReplayRequest returns the request stored under key, and whether a card post
// for its current round is queued. It only reads: replays never write, except
// through RedriveCard.
func (l *Ledger) ReplayRequest(ctx context.Context, key string) (Request, bool, error) {
	found, err := l.ReplayRequests(ctx, []string{key})
	if err != nil {
		return Request{}, false, err
	}
	r, ok := found[key]
	if !ok {
		return Request{}, false, ErrNotFound
	}
	return r.Request, r.PostQueued, nil
}

// RedriveCard queues a card post for the request's round when it is pending,
// its card was never posted and no post is queued (invariant 2: a replay
// re-notifies Slack only to re-drive a card that was never posted).
func (l *Ledger) RedriveCard(ctx context.Context, requestID string) error {
	if !IsUUID(requestID) {
		return nil
	}
	return l.driver.Write(ctx, func(ex Executor) error {
		return ex.RedriveCard(ctx, requestID, OutboxPostCard)
	})
}

// RequestByRef returns the request named by its id or its full key.
func (l *Ledger) RequestByRef(ctx context.Context, ref string) (Request, error) {
	if IsUUID(ref) {
		return l.RequestByID(ctx, ref)
	}
	return l.RequestByKey(ctx, ref)
}

// CancelRequest moves a pending request to cancelled with its audit event and
// card update. cancelled is false when the request was no longer pending.
func (l *Ledger) CancelRequest(ctx context.Context, id, actor string, now *time.Time) (req Request, cancelled bool, err error) {
	if !IsUUID(id) {
		return Request{}, false, ErrNotFound
	}
	err = l.inTx(ctx, func(ex Executor) error {
		req, cancelled, err = ex.CancelRequest(ctx, id, now)
		if err != nil {
			return fmt.Errorf("cancelling request: %w", err)
		}
		if !cancelled {
			req, err = ex.RequestByID(ctx, id)
			return err
		}
		if err := l.queueCallback(ctx, ex, req.ID, req.RequestedBy, CallbackSettled, req.UpdatedAt); err != nil {
			return err
		}
		if err := write(ctx, ex,
			[]Event{{RequestID: req.ID, At: req.UpdatedAt, Actor: actor, Kind: EventCancelled, Data: map[string]any{"round": req.Round}}},
			[]NewOutbox{updateCard(req.ID, req.Round, req.UpdatedAt)}); err != nil {
			return err
		}
		return notify(ctx, ex, changed(req.ID))
	})
	if err != nil {
		return Request{}, false, err
	}
	return req, cancelled, nil
}

// ExpireDue moves up to limit pending requests past their expiry to expired,
// each with its audit event and card update, and returns them.
func (l *Ledger) ExpireDue(ctx context.Context, now *time.Time, limit int) (reqs []Request, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		if reqs, err = ex.ExpireRequests(ctx, now, limit); err != nil {
			return fmt.Errorf("expiring requests: %w", err)
		}
		var o owing
		for _, r := range reqs {
			o.add(Owed{
				Events:     []Event{{Actor: SystemActor, Kind: EventExpired, Data: map[string]any{"round": r.Round}}},
				Outbox:     []NewOutbox{cardUpdate()},
				WakeChange: true,
			}, r.ID, r.Round, r.UpdatedAt)
			if err := l.queueCallback(ctx, ex, r.ID, r.RequestedBy, CallbackSettled, r.UpdatedAt); err != nil {
				return err
			}
		}
		return o.write(ctx, ex)
	})
	if err != nil {
		return nil, err
	}
	return reqs, nil
}

// SetCard records where a request's card was posted: its surface and the
// surface's reference to it.
func (l *Ledger) SetCard(ctx context.Context, id, surface, ref string) error {
	if !IsUUID(id) {
		return nil
	}
	return l.driver.Write(ctx, func(ex Executor) error { return ex.SetCard(ctx, id, surface, ref) })
}

// Decide records a verdict if, and only if, the request is still pending in
// the given round with the given payload hash and has not expired. The
// conditional status update is the single write that picks the winner;
// losers find the request decided. On success it also writes the decision,
// the execution (on approve), the audit event and the card update. decided
// is false when the request was not in that state.
func (l *Ledger) Decide(ctx context.Context, p DecideParams) (req Request, d Decision, decided bool, err error) {
	if !IsUUID(p.RequestID) {
		return Request{}, Decision{}, false, nil
	}
	err = l.inTx(ctx, func(ex Executor) error {
		req, d, decided, err = l.decideTx(ctx, ex, p)
		return err
	})
	if err != nil || !decided {
		return Request{}, Decision{}, false, err
	}
	return req, d, true, nil
}

// decideTx is Decide in the caller's transaction.
func (l *Ledger) decideTx(ctx context.Context, ex Executor, p DecideParams) (req Request, d Decision, decided bool, err error) {
	req, decided, err = ex.DecideRequest(ctx, p)
	if err != nil || !decided {
		return req, d, false, err
	}
	d, err = ex.InsertDecision(ctx, Decision{RequestID: req.ID, Round: req.Round, Verdict: p.Verdict,
		DecidedBy: p.DecidedBy, Via: p.Via, PayloadHashSeen: p.PayloadHash, DecidedAt: req.UpdatedAt, Reason: p.Reason})
	if err != nil {
		return req, d, false, fmt.Errorf("recording decision: %w", err)
	}
	if p.Verdict == VerdictApprove {
		if err := ex.InsertExecution(ctx, NewExecution{RequestID: req.ID, DecisionID: d.ID,
			MaxAttempts: p.MaxAttempts, At: d.DecidedAt}); err != nil {
			return req, d, false, fmt.Errorf("creating execution: %w", err)
		}
		// The agent performs an agent-executed write itself: the approval
		// is its news, as a settlement is of a write countersign sends.
		if req.Policy.AgentExecuted() {
			if err := l.queueCallback(ctx, ex, req.ID, req.RequestedBy, CallbackApproved, d.DecidedAt); err != nil {
				return req, d, false, err
			}
		}
	} else if err := l.queueCallback(ctx, ex, req.ID, req.RequestedBy, CallbackSettled, d.DecidedAt); err != nil {
		return req, d, false, err
	}
	if p.Verdict == VerdictReject && mutant.Every("write-without-approval", 3) { // planted bug: a rejected write runs
		if err := ex.InsertExecution(ctx, NewExecution{RequestID: req.ID, DecisionID: d.ID, MaxAttempts: max(p.MaxAttempts, 1), At: d.DecidedAt}); err != nil {
			return req, d, false, fmt.Errorf("creating execution: %w", err)
		}
	}
	data := map[string]any{"verdict": p.Verdict, "round": req.Round, "via": p.Via, "payload_hash_seen": p.PayloadHash}
	if p.Reason != "" {
		data["reason"] = p.Reason
	}
	maps.Copy(data, p.data)
	var outbox []NewOutbox
	if !p.noCard {
		outbox = []NewOutbox{updateCard(req.ID, req.Round, d.DecidedAt)}
	}
	err = write(ctx, ex,
		[]Event{{RequestID: req.ID, At: d.DecidedAt, Actor: p.DecidedBy, Kind: EventDecided, Data: data}},
		outbox)
	if err == nil && mutant.Every("decision-twice", 4) { // planted bug: the decision recorded twice
		err = write(ctx, ex, []Event{{RequestID: req.ID, At: d.DecidedAt, Actor: p.DecidedBy, Kind: EventDecided, Data: data}}, nil)
	}
	if err == nil {
		// An approval's execution is ready: the dispatcher wakes with the
		// request's waiters.
		err = notify(ctx, ex, Wakeups{Changed: []string{req.ID}, Ready: p.Verdict == VerdictApprove})
	}
	return req, d, err == nil, err
}

// AppendEvent appends an audit event; a zero At means the database clock.
func (l *Ledger) AppendEvent(ctx context.Context, e Event) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.InsertEvents(ctx, []Event{e}) })
}

// ClaimExecutions moves up to Limit due ready executions to claimed, counting
// the attempt on the row and writing each claim's audit event and card
// update. Rows another worker holds are skipped, so any number of workers
// can claim at once and none gets the same row.
func (l *Ledger) ClaimExecutions(ctx context.Context, p ClaimParams) (claims []Claim, err error) {
	if p.Limit <= 0 || len(p.ClaimTimeouts) == 0 {
		return nil, nil
	}
	owed := claimed(p.Worker)
	if b := l.driver.Batch(); b != nil {
		return b.ClaimExecutionsBatch(ctx, p, owed)
	}
	err = l.inTx(ctx, func(ex Executor) error {
		if claims, err = ex.ClaimExecutionRows(ctx, p); err != nil {
			return fmt.Errorf("claiming executions: %w", err)
		}
		var o owing
		for _, c := range claims {
			o.addData(owed, c.RequestID, c.Round, c.UpdatedAt, ClaimFacts(c))
		}
		return o.write(ctx, ex)
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// TransitionExecutions applies a batch of transitions in one commit: each
// row moves only if it is still in p.From with the attempt count the caller
// saw (and, for claims, still held by p.Worker), and each move writes its
// audit event, its card update and, when asked, a thread reply. It returns
// the transitions that took effect. With p.AsyncCommit the commit does not
// wait for the disk (see TransitionParams).
func (l *Ledger) TransitionExecutions(ctx context.Context, p TransitionParams, ts []Transition) (applied []Applied, err error) {
	if len(ts) == 0 {
		return nil, nil
	}
	p.CallbackAgents = l.callbackAgentsOf().list
	owed := make([]Owed, len(ts))
	for i, t := range ts {
		owed[i] = transitioned(p, t)
	}
	if b := l.driver.Batch(); b != nil && !p.AsyncCommit {
		return b.TransitionExecutionsBatch(ctx, p, ts, owed)
	}
	err = l.driver.InTx(ctx, !p.AsyncCommit, func(ex Executor) error {
		if b, ok := ex.(BatchExecutor); ok {
			applied, err = b.TransitionExecutionsBatch(ctx, p, ts, owed)
			return err
		}
		applied = nil
		var o owing
		for i, t := range ts {
			a, at, ok, err := ex.TransitionExecutionRow(ctx, p, t)
			if err != nil {
				return fmt.Errorf("recording outcomes: %w", err)
			}
			if !ok {
				continue
			}
			applied = append(applied, a)
			for _, event := range owed[i].Callbacks {
				if err := l.queueCallback(ctx, ex, a.RequestID, "", event, at); err != nil {
					return err
				}
			}
			o.add(owed[i], a.RequestID, a.Round, at)
		}
		return o.write(ctx, ex)
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// Supersede retires a claimed execution before anything was sent and sends
// its request back to review: the execution becomes superseded, the request
// pending in a new round (under p.Policy when set), with the audit event, an
// update of the old round's card and a post of the new round's card. With
// p.Denial the new round is decided at once, as a decision at intake is
// (Intake): rejected, its callback queued, and no card posted for it.
// superseded is false when the claim is no longer the caller's or the
// request moved on (the execution stays retired in the second case).
func (l *Ledger) Supersede(ctx context.Context, p SupersedeParams) (newRound int, superseded bool, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		s, ok, err := ex.SupersedeExecution(ctx, p)
		if err != nil || !ok {
			return err
		}
		newRound, superseded, err = ex.ReopenRequest(ctx, ReopenRequestParams{RequestID: s.RequestID, Round: s.Round, At: s.At,
			TTL: p.RequestTTL, Policy: p.Policy})
		if err != nil || !superseded {
			return err
		}
		if err := notify(ctx, ex, changed(s.RequestID)); err != nil {
			return err
		}
		data := map[string]any{"execution_id": p.ExecutionID, "attempt": p.Attempt, "code": p.Code,
			"message": p.Message, "round": s.Round, "new_round": newRound}
		maps.Copy(data, p.Data)
		if err := write(ctx, ex,
			[]Event{{RequestID: s.RequestID, At: s.At, Actor: ExecutorActor(p.Worker), Kind: EventSuperseded, Data: data}},
			[]NewOutbox{updateCard(s.RequestID, s.Round, s.At)}); err != nil {
			return err
		}
		if d := p.Denial; d != nil {
			_, _, decided, err := l.decideTx(ctx, ex, DecideParams{RequestID: s.RequestID, Round: newRound,
				PayloadHash: s.PayloadHash, Verdict: VerdictReject, DecidedBy: d.DecidedBy, Via: d.Via, Reason: d.Reason,
				Now: &s.At, data: d.Data, noCard: true})
			if err == nil && !decided { // pending and open since the reopen above: only a bug lands here
				err = fmt.Errorf("superseding: the new round %d of %s could not be decided", newRound, s.RequestID)
			}
			return err
		}
		if err := l.queueCallback(ctx, ex, s.RequestID, "", CallbackNeedsReview, s.At); err != nil {
			return err
		}
		return write(ctx, ex, nil, []NewOutbox{{Kind: OutboxPostCard, RequestID: s.RequestID, Round: newRound, At: s.At}})
	})
	if err != nil || !superseded {
		return 0, false, err
	}
	return newRound, true, nil
}

// Resolve moves an execution out of needs_review with its audit event and
// card update. A move back to ready (a resend under the same key) raises the
// attempt cap to allow at least one more attempt. resolved is false when the
// execution exists but is not in needs_review; a missing execution is
// ErrNotFound.
func (l *Ledger) Resolve(ctx context.Context, p ResolveParams) (resolved bool, err error) {
	if !IsUUID(p.RequestID) {
		return false, ErrNotFound
	}
	p.Grant, p.ClearVerifyFirst = 0, false
	if p.To == ExecReady {
		// A human who has it resent has looked: it is sent, not verified
		// again, and may be sent once more whatever attempts it used.
		p.Grant, p.ClearVerifyFirst = resendGrant, true
	}
	err = l.inTx(ctx, func(ex Executor) error {
		r, ok, err := ex.ResolveExecution(ctx, p)
		if err != nil {
			return fmt.Errorf("resolving execution: %w", err)
		}
		if !ok {
			exists, err := ex.ExecutionExists(ctx, p.ExecutionID, p.RequestID)
			if err != nil {
				return fmt.Errorf("resolving execution: %w", err)
			}
			if !exists {
				return ErrNotFound
			}
			return nil
		}
		resolved = true
		if event, ok := callbackEventFor(p.To); ok {
			if err := l.queueCallback(ctx, ex, p.RequestID, "", event, r.At); err != nil {
				return err
			}
		}
		if err := notify(ctx, ex, Wakeups{Changed: []string{p.RequestID}, Ready: wakesReady(p.To)}); err != nil {
			return err
		}
		return write(ctx, ex,
			[]Event{{RequestID: p.RequestID, At: r.At, Actor: p.By, Kind: EventResolved, Data: map[string]any{
				"execution_id": p.ExecutionID, "action": p.Action, "attempt": r.Attempts, "state": p.To}}},
			[]NewOutbox{updateCard(p.RequestID, r.Round, r.At)})
	})
	if err != nil {
		return false, err
	}
	return resolved, nil
}

// resendGrant is how many more attempts a human's resend allows past those
// the execution has used.
const resendGrant = 1

// CodeClaimTimeout is the last_code of an execution whose claim expired
// before its outcome was recorded.
const CodeClaimTimeout = "claim_timeout"

// claimTimeoutError is its last_error.
const claimTimeoutError = "the claim expired before an outcome was recorded"

// ExpireClaims moves up to limit claims past their claim_expires_at to
// unknown, each with its audit event and card update, and returns how many
// moved. The worker that held such a claim may have sent the write or not;
// only the provider can say, so the row goes to verification, never straight
// back to ready.
func (l *Ledger) ExpireClaims(ctx context.Context, now *time.Time, limit int) (moved int, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		expired, err := ex.ExpireClaimRows(ctx, now, limit, CodeClaimTimeout, claimTimeoutError)
		if err != nil {
			return fmt.Errorf("expiring claims: %w", err)
		}
		moved = len(expired)
		var o owing
		for _, e := range expired {
			o.add(Owed{
				Events: []Event{{Actor: ReconcilerActor, Kind: EventUnknown,
					Data: map[string]any{"attempt": e.Attempts, "execution_id": e.ExecutionID, "code": CodeClaimTimeout, "held_by": e.HeldBy}}},
				Outbox:     []NewOutbox{cardUpdate()},
				WakeChange: true,
			}, e.RequestID, e.Round, e.At)
		}
		return o.write(ctx, ex)
	})
	if err != nil {
		return 0, err
	}
	return moved, nil
}

// LeaseUnknowns returns up to limit due unknown executions and pushes their
// next_attempt_at out by lease, so replicas reconciling at once verify each
// row once per lease. A lease is not a state change: it writes no event.
func (l *Ledger) LeaseUnknowns(ctx context.Context, p LeaseUnknownsParams) ([]Unknown, error) {
	return alone(ctx, l, func(ex Executor) ([]Unknown, error) { return ex.LeaseUnknowns(ctx, p) })
}

// EnqueueOutbox queues a delivery to every surface of the request's tool; a
// zero at means the database clock.
func (l *Ledger) EnqueueOutbox(ctx context.Context, kind OutboxKind, requestID string, round int, data map[string]any, at time.Time) error {
	return l.driver.Write(ctx, func(ex Executor) error {
		return ex.InsertOutbox(ctx, []NewOutbox{{Kind: kind, RequestID: requestID, Round: round, Data: data, At: at}})
	})
}

// FanOutOutbox hands row, queued for every surface of its request's tool,
// to each of surfaces: one row per surface, due now, with row's data, and
// row delivered, in one transaction. Each surface's row then has its own
// attempts, pacing and outcome.
func (l *Ledger) FanOutOutbox(ctx context.Context, row OutboxRow, surfaces []string) error {
	rows := make([]NewOutbox, len(surfaces))
	for i, s := range surfaces {
		rows[i] = NewOutbox{Kind: row.Kind, RequestID: row.RequestID, Round: row.Round, Data: row.Data,
			Surface: s, Destination: row.Destination}
	}
	return l.inTx(ctx, func(ex Executor) error {
		if err := ex.MarkOutboxDelivered(ctx, row.ID, "handed to "+strings.Join(surfaces, ", ")); err != nil {
			return err
		}
		return ex.InsertOutbox(ctx, rows)
	})
}

// ClaimOutbox leases up to limit due deliveries, oldest first: their
// next_attempt_at moves lease into the future, so another worker skips them
// until the lease runs out (a crashed worker's rows come back by themselves).
// Each claim counts as an attempt, so a row claimed before is one whose
// earlier delivery may have landed. No transaction stays open while Slack is
// called.
func (l *Ledger) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]OutboxRow, error) {
	claimed, err := alone(ctx, l, func(ex Executor) ([]OutboxRow, error) { return ex.ClaimOutbox(ctx, limit, lease) })
	if err != nil {
		return nil, err
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return claimed, nil
}

// MarkOutboxDelivered records a delivery that landed; note, if any, says why
// nothing had to be sent.
func (l *Ledger) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.MarkOutboxDelivered(ctx, id, note) })
}

// MarkOutboxFailed records a delivery that can never land, with its reason.
func (l *Ledger) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.MarkOutboxFailed(ctx, id, reason) })
}

// RetryOutbox puts a delivery back for another try (see RetryOutboxParams).
func (l *Ledger) RetryOutbox(ctx context.Context, p RetryOutboxParams) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.RetryOutbox(ctx, p) })
}

// RenewOutbox keeps the claims on ids, deliveries still being made, for
// lease more: a worker renews while it works, so the lease can be short and
// a dead worker's rows come back soon. A row finished meanwhile is left as
// it is.
func (l *Ledger) RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	return l.driver.Write(ctx, func(ex Executor) error { return ex.RenewOutbox(ctx, ids, lease) })
}

// RecordCard stores where a round's card was posted and the state it showed,
// and, when it is the request's current round and the request has none yet,
// the request's card_surface and card_ref. The first recorded card of a
// round on a surface wins; the card that stands is returned.
func (l *Ledger) RecordCard(ctx context.Context, c Card) (Card, error) {
	return alone(ctx, l, func(ex Executor) (Card, error) { return ex.RecordCard(ctx, c) })
}

// MarkCardRendered records the state a card now shows.
func (l *Ledger) MarkCardRendered(ctx context.Context, p MarkCardRenderedParams) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.MarkCardRendered(ctx, p) })
}

// EnqueueStaleCards is the convergence sweep's write: it queues an update for
// up to limit unsettled cards whose shown state differs from the ledger's
// and that have no update waiting (nor one that failed within
// Options.CardRetryAfter), and a post for pending rounds (not past their
// expiry) left without a card for Options.CardUnpostedAfter that have no
// post waiting (nor one failed within CardRetryAfter). It returns how many
// deliveries it queued. Safe on every replica at once: a duplicate
// delivery renders the same state.
func (l *Ledger) EnqueueStaleCards(ctx context.Context, limit int) (int, error) {
	p := l.staleCards
	p.Limit = limit
	return alone(ctx, l, func(ex Executor) (int, error) { return ex.EnqueueStaleCards(ctx, p) })
}

// Unresolved is a request whose write is in doubt: its execution is unknown
// (being reconciled) or needs a human.
type Unresolved struct {
	Request   Request
	Execution Execution
}

// UnresolvedExecutions returns up to limit executions in unknown or
// needs_review, oldest change first, with their requests.
func (l *Ledger) UnresolvedExecutions(ctx context.Context, limit int) ([]Unresolved, error) {
	ex := l.driver.Reader()
	ids, err := ex.UnresolvedRequestIDs(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("listing unresolved executions: %w", err)
	}
	out := make([]Unresolved, 0, len(ids))
	for _, id := range ids {
		req, err := ex.RequestByID(ctx, id)
		if err != nil {
			return nil, err
		}
		e, err := ex.LatestExecution(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, Unresolved{Request: req, Execution: e})
	}
	return out, nil
}

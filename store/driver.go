package store

import (
	"context"
	"log/slog"
	"time"
)

// Driver is one database the Ledger runs on: it opens and closes it,
// migrates it, runs transactions and answers the single-statement
// primitives of Executor. Domain rules (which audit event and outbox rows a
// transition writes, who the actor is) live in the Ledger, not here. Every
// write goes through Write or InTx.
type Driver interface {
	// Reader answers the reads outside any transaction.
	Reader() Reader
	// Write runs fn, whose writes are one primitive that stands alone (a
	// single statement), as cheaply as the database makes it atomic:
	// PostgreSQL runs it on the pool, where the statement commits by
	// itself; SQLite, which writes only in transactions on its one writer,
	// runs it in a durable one.
	Write(ctx context.Context, fn func(Executor) error) error
	// InTx runs fn in one transaction, committed when fn returns nil. With
	// durable false the commit may return before it is on disk (see
	// TransitionParams.AsyncCommit).
	InTx(ctx context.Context, durable bool, fn func(Executor) error) error
	// Batch returns the driver's one-statement hot paths to run outside a
	// transaction, or nil when it has none (the Ledger then composes them
	// from primitives in InTx).
	Batch() BatchExecutor
	Migrate(ctx context.Context, logger *slog.Logger) (int, error)
	// PrepareAuditMonths creates the audit trail's partitions of this month
	// and the months after it, up to ahead, that do not exist yet, and
	// returns how many it created (none where the store has no partitions).
	PrepareAuditMonths(ctx context.Context, ahead int) (int, error)
	// DropAuditMonths drops the whole months of audit events that ended
	// before before and before the store's own floor, oldest first, each
	// recording its AuditCheckpoint in the same transaction, and returns how
	// many it dropped.
	DropAuditMonths(ctx context.Context, before time.Time) (int, error)
	Ping(ctx context.Context) error
	Close()
	// Notifier returns what wakes this database's waiters and, when the
	// wake-ups need a loop of their own (PostgreSQL's LISTEN connection),
	// the service that runs it between its Start and Stop and a channel
	// closed once it receives. listener is nil when the driver wakes its
	// subscribers after its own commits.
	Notifier(logger *slog.Logger) (n Notifier, listener Service, listening <-chan struct{})
	// Remote reports whether each statement is a network round trip. Intake
	// then inserts first and learns of a replay from the key's conflict: one
	// round trip for a new intent. An in-process store reads first instead,
	// which keeps replays off its single writer.
	Remote() bool
}

// Reader answers the ledger's reads, each one statement. Services call it
// directly: Store embeds it and the Ledger promotes its driver's, so a read
// is written once per driver and nowhere else. An argument that can name no
// row (an id that is not a UUID, text holding NUL) finds nothing, as any
// other missing row: ErrNotFound for one row, an empty list, false.
type Reader interface {
	// RequestByKey returns the request stored under key.
	RequestByKey(ctx context.Context, key string) (Request, error)
	// RequestByID returns the request with the given id.
	RequestByID(ctx context.Context, id string) (Request, error)
	// ReplayRequests reads keys with whether each one's current round has a
	// card post queued; missing keys are left out.
	ReplayRequests(ctx context.Context, keys []string) (map[string]Replayed, error)

	// VotesFor returns a request round's votes, oldest first.
	VotesFor(ctx context.Context, requestID string, round int) ([]Vote, error)
	// DecisionFor returns the decision recorded for a request round.
	DecisionFor(ctx context.Context, requestID string, round int) (Decision, error)
	// LatestDecision returns the decision of the request's highest decided
	// round.
	LatestDecision(ctx context.Context, requestID string) (Decision, error)
	// EventsFor returns a request's audit trail, oldest first (in the order
	// of its hash chain).
	EventsFor(ctx context.Context, requestID string) ([]Event, error)

	// LatestExecution returns the newest execution of a request.
	LatestExecution(ctx context.Context, requestID string) (Execution, error)
	// ExecutionsFor returns every execution of a request, oldest first.
	ExecutionsFor(ctx context.Context, requestID string) ([]Execution, error)
	// ExecutionForDecision returns the newest execution created by a
	// decision.
	ExecutionForDecision(ctx context.Context, decisionID int64) (Execution, error)
	// ExecutionExists reports whether execution id belongs to the request.
	ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error)
	// CountUnsettled returns how many executions are unknown and how many
	// wait for a human.
	CountUnsettled(ctx context.Context) (unknown, needsReview int, err error)
	// UnresolvedRequestIDs lists the requests of up to limit executions in
	// unknown or needs_review, oldest change first.
	UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error)

	// PostPending reports whether a post of the request round's card is
	// still waiting to be delivered.
	PostPending(ctx context.Context, requestID string, round int) (bool, error)
	// OtherPostRows reports whether the round of row's request has post
	// rows for row's surface (or for every surface) besides row, in any
	// state: an earlier one may have posted the card.
	OtherPostRows(ctx context.Context, row OutboxRow) (bool, error)
	// CardFor returns the card of a request round on surface, or
	// ErrNotFound if it was never recorded.
	CardFor(ctx context.Context, requestID string, round int, surface string) (Card, error)
	// CardState returns what a round's card must show (CardStateOf), or
	// ErrNotFound when the request does not exist.
	CardState(ctx context.Context, requestID string, round int) (string, error)

	// PartsOf returns the RequestParts of each of reqs, in their order, in
	// one round trip where statements are round trips: a page of
	// representations then costs one read beside the list's, not four per
	// request.
	PartsOf(ctx context.Context, reqs []Request) ([]RequestParts, error)
	// HistoryOf returns the History of a request, in one round trip where
	// statements are round trips.
	HistoryOf(ctx context.Context, requestID string) (History, error)

	// LatestCallback returns the request's newest delivery, or ErrNotFound.
	LatestCallback(ctx context.Context, requestID string) (Callback, error)
	// CountCallbackBacklog returns how many deliveries are pending.
	CountCallbackBacklog(ctx context.Context) (int, error)
	// CountOutboxBacklog returns how many deliveries to review surfaces
	// (cards, updates, replies) are pending.
	CountOutboxBacklog(ctx context.Context) (int, error)
	// ReadyByTool counts the executions waiting to be sent, per tool: a
	// tool no longer configured has rows nothing will claim.
	ReadyByTool(ctx context.Context) ([]ToolCount, error)

	// RequestsByKeyPrefix returns up to limit requests whose key starts
	// with prefix, in key order, by a range scan on the key's unique index
	// (byte order), so a prefix never becomes a LIKE pattern.
	RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]Request, error)
	// RequestsByEffectString returns up to limit requests, newest first,
	// whose effect holds value as a string at any depth (EffectStrings,
	// stored at intake and indexed).
	RequestsByEffectString(ctx context.Context, value string, limit int) ([]Request, error)
	// RequestsByToolEffectString returns up to limit requests of tool
	// created before before, newest first, whose effect holds value as a
	// string at any depth (the index of RequestsByEffectString).
	RequestsByToolEffectString(ctx context.Context, tool, value string, before time.Time, limit int) ([]Request, error)
	// PreviewFor returns a request's preview, or ErrNotFound when none was
	// asked for.
	PreviewFor(ctx context.Context, requestID string) (Preview, error)
	// PendingRequests returns up to limit pending requests, soonest expiry
	// first.
	PendingRequests(ctx context.Context, limit int) ([]Request, error)
	// RecentlyDecided returns up to limit requests that left pending
	// (decided, expired or cancelled), most recently changed first.
	RecentlyDecided(ctx context.Context, limit int) ([]Request, error)

	// DueNudges lists up to p.Limit requests due a nudge (see
	// DueNudgesParams), longest waiting first. A request whose card is not
	// posted yet waits: there is no thread to reply in.
	DueNudges(ctx context.Context, p DueNudgesParams) ([]Request, error)
	// NudgeQueued reports whether a nudge of kind is queued for the
	// request round.
	NudgeQueued(ctx context.Context, requestID string, round int, kind NudgeKind) (bool, error)
	// PendingByTool counts the pending requests of each tool that has any.
	PendingByTool(ctx context.Context) ([]PendingTool, error)

	// AuditChain returns up to limit audit events after the cursor, in
	// (request id, seq) order, with their chain fields.
	AuditChain(ctx context.Context, after AuditCursor, limit int) ([]AuditEvent, error)
	// AuditCheckpoints returns the checkpoints of dropped audit months, in
	// the order they were recorded.
	AuditCheckpoints(ctx context.Context) ([]AuditCheckpoint, error)
	// CheckpointHeads returns up to limit heads of checkpoint id after
	// request afterRequest ("" from the start), in request id order.
	CheckpointHeads(ctx context.Context, id int64, afterRequest string, limit int) ([]CheckpointHead, error)
	// LastCheckpointHead returns the newest head a checkpoint holds for the
	// request; found false when no checkpoint cut its chain.
	LastCheckpointHead(ctx context.Context, requestID string) (head CheckpointHead, found bool, err error)
	// CheckpointHeadFrom returns the head a checkpoint holds for the
	// request with the lowest number of seq or more: the last event of the
	// month that took event seq with it. found false when none does (or
	// the id cannot be a request's).
	CheckpointHeadFrom(ctx context.Context, requestID string, seq int) (head CheckpointHead, found bool, err error)
	// Tombstones reads the tombstones of pruned keys; keys never pruned are
	// left out.
	Tombstones(ctx context.Context, keys []string) (map[string]Tombstone, error)

	// ListRequests returns up to p.Limit requests that match p, newest
	// first (see ListRequestsParams), reading only the page: an index per
	// filter keeps a page as cheap deep in a long listing as at its start.
	// The embedded store, which serves one machine, keeps only the
	// agent's index and filters in listing order.
	ListRequests(ctx context.Context, p ListRequestsParams) ([]Request, error)

	// GrantByID returns a standing grant, live or ended.
	GrantByID(ctx context.Context, id string) (Grant, error)
	// LiveGrants returns the grants of tool and agent live at at (not
	// revoked, expiring after it), oldest first.
	LiveGrants(ctx context.Context, tool, agent string, at time.Time) ([]Grant, error)
	// ListGrants returns up to p.Limit grants that match p, newest first.
	ListGrants(ctx context.Context, p ListGrantsParams) ([]Grant, error)
}

// Executor answers the primitives the Ledger composes: the reads, and the
// writes, each one statement (or, on SQLite, what one statement does). Each
// translates its errors to ErrNotFound, ErrConflict and ErrUnavailable. A
// nil *time.Time means the database clock, read once per transaction.
type Executor interface {
	Reader

	// InsertRequest inserts one request unless its key exists or was pruned
	// (inserted false, zero Request). It writes no event and no outbox row.
	InsertRequest(ctx context.Context, p NewRequest, now *time.Time) (req Request, inserted bool, err error)
	// DecideRequest moves a request pending in p.Round with p.PayloadHash and
	// not expired to the verdict's status; ok false when it was not so.
	DecideRequest(ctx context.Context, p DecideParams) (req Request, ok bool, err error)
	// CancelRequest moves a pending request to cancelled; ok false when it
	// was not pending.
	CancelRequest(ctx context.Context, id string, now *time.Time) (req Request, ok bool, err error)
	// ExpireRequests moves up to limit pending requests past their expiry
	// to expired, skipping rows another transaction holds.
	ExpireRequests(ctx context.Context, now *time.Time, limit int) ([]Request, error)
	// ReopenRequest sends a request approved in p.Round back to pending in
	// the next round at p.At, its expiry at least p.At+p.TTL, under
	// p.Policy when it is set; ok false when it moved on.
	ReopenRequest(ctx context.Context, p ReopenRequestParams) (newRound int, ok bool, err error)
	// MarkEdited settles a request pending in p.Round with p.PayloadHash
	// and unexpired as edited, superseded by p.SupersededBy; ok false when
	// it was not so.
	MarkEdited(ctx context.Context, p MarkEditedParams) (req Request, ok bool, err error)
	// SetCard points the request at its card: surface and its ref.
	SetCard(ctx context.Context, id, surface, ref string) error

	// SettledRequests reads up to p.Limit requests settled before p.Before
	// (see SettledParams), oldest change first, each with the tombstone it
	// leaves, and holds them until the transaction ends, skipping rows
	// another transaction holds. A request whose callback is still pending
	// is left for a later run.
	SettledRequests(ctx context.Context, p SettledParams) ([]Prunable, error)
	// InsertTombstones records tombstones; a key that has one keeps it.
	InsertTombstones(ctx context.Context, ts []Tombstone) error
	// DeleteRequests deletes requests with every row that references them,
	// except their audit events.
	DeleteRequests(ctx context.Context, ids []string) error
	// RedriveCard queues a post (kind) of a pending request's card when it
	// was never posted and none is queued (one conditional insert).
	RedriveCard(ctx context.Context, id string, kind OutboxKind) error

	// LockOpenRequest reads the request pending in p.Round with
	// p.PayloadHash and unexpired, and holds it until the transaction ends
	// so its voters take turns; ok false when it is not so.
	LockOpenRequest(ctx context.Context, p DecideParams) (req Request, ok bool, err error)
	// InsertVote records a vote unless the voter voted in that round already
	// (cast false, zero Vote). A zero VotedAt is the database clock.
	InsertVote(ctx context.Context, v Vote) (out Vote, cast bool, err error)
	InsertDecision(ctx context.Context, d Decision) (Decision, error)

	// InsertEvents appends audit events; a zero At is the database clock.
	InsertEvents(ctx context.Context, events []Event) error
	// InsertOutbox queues deliveries; a zero At is the database clock.
	InsertOutbox(ctx context.Context, rows []NewOutbox) error

	// InsertExecution creates the ready execution of an approval, copying
	// the request's key, tool and snapshot.
	InsertExecution(ctx context.Context, e NewExecution) error
	// ClaimExecutionRows moves due ready executions to claimed (see
	// ClaimExecutions) and writes nothing else.
	ClaimExecutionRows(ctx context.Context, p ClaimParams) ([]Claim, error)
	// TransitionExecutionRow moves one execution as TransitionExecutions
	// does and writes nothing else; ok false when it was not so held.
	TransitionExecutionRow(ctx context.Context, p TransitionParams, t Transition) (a Applied, at time.Time, ok bool, err error)
	// SupersedeExecution retires a claimed execution still held by
	// p.Worker at p.Attempt; ok false otherwise.
	SupersedeExecution(ctx context.Context, p SupersedeParams) (s Superseded, ok bool, err error)
	// ResolveExecution moves an execution out of needs_review; ok false
	// when it is not there (or does not exist).
	ResolveExecution(ctx context.Context, p ResolveParams) (r Resolved, ok bool, err error)
	// MarkRestored records a restore of this database (see Restore): it
	// flags every unsettled execution to verify before its next send, and
	// every execution inserted later whose request was created before the
	// restore's GuardUntil.
	MarkRestored(ctx context.Context, p RestoreParams) (Restore, error)
	// ExpireClaimRows moves up to limit claims past their expiry to unknown,
	// recording code and message as the row's last_code and last_error.
	ExpireClaimRows(ctx context.Context, now *time.Time, limit int, code, message string) ([]ExpiredClaim, error)
	LeaseUnknowns(ctx context.Context, p LeaseUnknownsParams) ([]Unknown, error)

	ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]OutboxRow, error)
	MarkOutboxDelivered(ctx context.Context, id int64, note string) error
	MarkOutboxFailed(ctx context.Context, id int64, reason string) error
	RetryOutbox(ctx context.Context, p RetryOutboxParams) error
	// TakePostSlot takes the next post slot of lane, interval after the
	// one before it and not before a pause ends, and returns how long from
	// now until it comes (zero: now).
	TakePostSlot(ctx context.Context, lane Lane, interval time.Duration) (time.Duration, error)
	// PauseLane pauses posts to lane for at least d from now.
	PauseLane(ctx context.Context, lane Lane, d time.Duration) error
	// LanePause is how long lane's pause still runs (zero: none).
	LanePause(ctx context.Context, lane Lane) (time.Duration, error)
	// CountSurfaceAttempt adds one to a's count of failed attempts (a
	// row kept until a.Expires), deletes the counts past their expiry, and
	// returns a's count.
	CountSurfaceAttempt(ctx context.Context, a SurfaceAttempt) (int, error)
	// SurfaceAttempts is the count of surface and key; zero without one.
	SurfaceAttempts(ctx context.Context, surface, key string) (int, error)
	// RenewOutbox moves the leases of the pending rows ids to at least
	// lease from now (never earlier: a retry's later time stands).
	RenewOutbox(ctx context.Context, ids []int64, lease time.Duration) error

	RecordCard(ctx context.Context, c Card) (Card, error)
	MarkCardRendered(ctx context.Context, p MarkCardRenderedParams) error
	// ClaimPreview inserts a request's preview p.Fetching, or takes over
	// one fetching since before p.StaleBefore; claimed false otherwise.
	ClaimPreview(ctx context.Context, p ClaimPreviewParams) (claimed bool, err error)
	// RecordPreview writes a fetch's outcome onto the request's preview
	// while it is p.Fetching; recorded false otherwise.
	RecordPreview(ctx context.Context, p RecordPreviewParams) (recorded bool, err error)
	// EnqueueStaleCards queues the convergence sweep's deliveries (see
	// Ledger.EnqueueStaleCards) with the thresholds, kinds and data in p.
	EnqueueStaleCards(ctx context.Context, p StaleCardsParams) (int, error)

	// InsertCallbacks queues agent callbacks; a zero At is the database clock.
	// Each row's retry window is CallbackRetryWindow from its At.
	InsertCallbacks(ctx context.Context, rows []NewCallback) error
	ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]Callback, error)
	MarkCallbackDelivered(ctx context.Context, claimed Callback, status int) error
	RetryCallback(ctx context.Context, p RetryCallbackParams) (CallbackState, error)
	// RenewCallback moves claimed's lease to lease from now and returns the
	// new one; ErrNotFound when the attempt is no longer the row's.
	RenewCallback(ctx context.Context, claimed Callback, lease time.Duration) (time.Time, error)
	// RedriveCallback makes the request's newest delivery pending and due
	// now, with window to retry it in; ok false when there is none.
	RedriveCallback(ctx context.Context, requestID string, window time.Duration) (Callback, bool, error)

	// QueueNudge queues a nudge's delivery of kind, with data (NudgeData),
	// for a request still pending in round; ok false when it is not, or
	// when a nudge of that kind is queued for the round already.
	QueueNudge(ctx context.Context, kind OutboxKind, requestID string, round int, data map[string]any) (at time.Time, ok bool, err error)

	// InsertGrant records a standing grant.
	InsertGrant(ctx context.Context, g Grant) error
	// RevokeGrant ends the grant p.ID if it is live at p.Now and, when
	// p.Grantor is set, is that grantor's; ok false otherwise.
	RevokeGrant(ctx context.Context, p RevokeGrantParams) (g Grant, ok bool, err error)
	// HoldGrant reports whether grant id is live at now and, on a store
	// with row locks, holds it until the transaction ends, so that a
	// revocation waits for an approval the grant is making or finds it
	// made.
	HoldGrant(ctx context.Context, id string, now *time.Time) (bool, error)

	// Notify wakes w's waiters, in this process and in every other sharing
	// the database, once the transaction commits (at once on PostgreSQL's
	// pool). It
	// writes no row; a rolled-back transaction wakes nobody.
	Notify(ctx context.Context, w Wakeups) error
}

// BatchExecutor is an Executor with one-statement versions of the hottest
// units. The Ledger builds what each row owes (its audit events, outbox
// rows, callbacks and wake-ups) and the statement writes it beside the row
// it moves, taking the row's request id, round and time from it: the rules
// stay in the Ledger, the round trip stays one (the driver test suite holds
// the batches to the primitives). The Ledger uses them when a driver has
// them (Driver.Batch): on PostgreSQL one statement saves a round trip per
// row.
type BatchExecutor interface {
	Executor
	// InsertRequestsBatch inserts ps (distinct keys) as InsertRequest does
	// and writes owed[i] for each ps[i] it inserted; a key that exists
	// already is returned, and a pruned key's tombstone (InsertResult.Pruned),
	// and they write nothing. Nobody can wait on a request
	// before it exists, so an insert's Owed carries no wake-ups.
	InsertRequestsBatch(ctx context.Context, ps []NewRequest, owed []Owed, now *time.Time) ([]InsertResult, error)
	// ClaimExecutionsBatch claims as ClaimExecutionRows does and writes owed
	// for every claim, each event's data merged with the claim's attempt,
	// execution id and claim expiry (ClaimFacts).
	ClaimExecutionsBatch(ctx context.Context, p ClaimParams, owed Owed) ([]Claim, error)
	// TransitionExecutionsBatch moves each ts[i] as TransitionExecutionRow
	// does and writes owed[i] for each one that moved.
	TransitionExecutionsBatch(ctx context.Context, p TransitionParams, ts []Transition, owed []Owed) ([]Applied, error)
}

// Owed is what a batch statement writes beside one row it moves, as the
// Ledger built it: the request id, round and At of its events, outbox rows
// and callbacks are left zero and taken from the row. A callback goes to
// the request's agent, and only when that agent is one of the transition's
// CallbackAgents.
type Owed struct {
	Events    []Event
	Outbox    []NewOutbox
	Callbacks []CallbackEvent
	// WakeChange wakes the waiters on the row's request, and WakeReady the
	// dispatcher, once the statement commits (as Notify does).
	WakeChange, WakeReady bool
}

// StaleCardsParams is what the convergence sweep queues: for up to Limit
// unsettled cards whose shown state differs from the ledger's, an
// UpdateKind row, and for pending rounds not past their expiry and never
// posted for UnpostedAfter, a PostKind row, both with Data, unless one is
// pending or failed within RetryAfter.
type StaleCardsParams struct {
	Limit         int
	RetryAfter    time.Duration
	UnpostedAfter time.Duration
	UpdateKind    OutboxKind
	PostKind      OutboxKind
	Data          map[string]any
}

// Replayed is what ReplayRequest reads for one key.
type Replayed struct {
	Request    Request
	PostQueued bool
}

// NewOutbox is a delivery to queue: for Surface at Destination, or, left
// "", for every surface of the request's tool (the batch statements queue
// only these).
type NewOutbox struct {
	Kind        OutboxKind
	RequestID   string
	Round       int
	Surface     string
	Destination string
	Data        map[string]any
	At          time.Time
	// Coalesce: the row is not queued while one of the same kind, request
	// and round waits that no delivery has claimed yet; that one does its
	// work when it is sent (a card update renders the card as it then is).
	// The driver locks the waiting row until the transaction ends, so a
	// delivery cannot claim it in between and miss this change.
	Coalesce bool
}

// NewExecution is the execution an approval creates.
type NewExecution struct {
	RequestID   string
	DecisionID  int64
	MaxAttempts int
	At          time.Time
}

// ReopenRequestParams says which approved round ReopenRequest sends back
// to review, when, and for how long at least the new round stays open.
type ReopenRequestParams struct {
	RequestID string
	Round     int
	At        time.Time
	TTL       time.Duration
	// Policy, when set, replaces the request's frozen policy for the new
	// round; nil keeps it.
	Policy *Policy
}

// Superseded is an execution SupersedeExecution retired.
type Superseded struct {
	RequestID   string
	Round       int // of the decision that approved it
	PayloadHash string
	At          time.Time
}

// Resolved is an execution ResolveExecution moved.
type Resolved struct {
	Attempts int
	Round    int
	At       time.Time
}

// ExpiredClaim is a claim ExpireClaimRows moved to unknown.
type ExpiredClaim struct {
	ExecutionID int64
	RequestID   string
	Round       int
	Attempts    int
	HeldBy      string
	At          time.Time
}

package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// CallbackEvent is what a callback reports; values equal the SQL values and
// the Countersign-Event header.
type CallbackEvent string

// Callback events (see docs/DECISIONS.md, "Callbacks"): a request settled
// (store.Settled), it needs a person again (a new round awaits reviewers,
// or its execution waits in needs_review), or an agent-executed write was
// approved, so its agent may perform it with the receipt.
const (
	CallbackSettled     CallbackEvent = "request.settled"
	CallbackNeedsReview CallbackEvent = "request.needs_review"
	CallbackApproved    CallbackEvent = "request.approved"
	// CallbackEdited: an approver edited the request; the edit is a new
	// request (superseded_by), and this one never runs.
	CallbackEdited CallbackEvent = "request.edited"
)

// CallbackState is where a delivery stands; values equal the SQL values.
type CallbackState string

// Callback states.
const (
	CallbackPending   CallbackState = "pending"
	CallbackDelivered CallbackState = "delivered"
	CallbackFailed    CallbackState = "failed"
)

// CallbackDelivering is what a callback's own body says of the delivery it
// arrives in: while an attempt holds it, its row is pending under the
// attempt's lease, which is not what the agent reading that body is told.
// It is never stored.
const CallbackDelivering CallbackState = "delivering"

// CallbackRetryWindow is how long a delivery is retried before it fails,
// counted from when it was queued or last redriven.
const CallbackRetryWindow = 24 * time.Hour

// NewCallback is a delivery to queue in a transition's transaction.
type NewCallback struct {
	RequestID string
	Agent     string
	Event     CallbackEvent
	At        time.Time // zero: the database clock
}

// Callback is one delivery to an agent's callback URL.
type Callback struct {
	ID            int64
	DeliveryID    string
	RequestID     string
	Agent         string
	Event         CallbackEvent
	State         CallbackState
	Attempts      int // claims so far, this one included when claimed
	NextAttemptAt time.Time
	GiveUpAt      time.Time
	LastStatus    *int
	LastError     string
	CreatedAt     time.Time
}

// callbackAgents is the set of agents with a callback URL; nil queues none.
type callbackAgents struct {
	names map[string]bool
	list  []string
}

// SetCallbackAgents names the agents whose requests queue callbacks; serve
// sets it from the configuration before it starts.
func (l *Ledger) SetCallbackAgents(names ...string) {
	set := &callbackAgents{names: make(map[string]bool, len(names))}
	for _, n := range names {
		if !set.names[n] {
			set.names[n] = true
			set.list = append(set.list, n)
		}
	}
	sort.Strings(set.list)
	l.callbacks.Store(set)
}

// callbackAgentsOf returns the current set (never nil).
func (l *Ledger) callbackAgentsOf() *callbackAgents {
	if set := l.callbacks.Load(); set != nil {
		return set
	}
	return &callbackAgents{}
}

// queueCallback queues, in ex's transaction, the delivery for event that
// the request's agent is owed if it has a callback. An empty agent is read
// from the request, and only when some agent has a callback.
func (l *Ledger) queueCallback(ctx context.Context, ex Executor, requestID, agent string, event CallbackEvent, at time.Time) error {
	set := l.callbackAgentsOf()
	if len(set.names) == 0 {
		return nil
	}
	if agent == "" {
		req, err := ex.RequestByID(ctx, requestID)
		if err != nil {
			return fmt.Errorf("reading the request of a callback: %w", err)
		}
		agent = req.RequestedBy
	}
	if !set.names[agent] {
		return nil
	}
	if err := ex.InsertCallbacks(ctx, []NewCallback{{RequestID: requestID, Agent: agent, Event: event, At: at}}); err != nil {
		return fmt.Errorf("queueing callbacks: %w", err)
	}
	return nil
}

// callbackEventFor returns the callback an execution entering to owes, if any.
func callbackEventFor(to ExecState) (CallbackEvent, bool) {
	switch to {
	case ExecSucceeded, ExecFailed:
		return CallbackSettled, true
	case ExecNeedsReview:
		return CallbackNeedsReview, true
	}
	return "", false
}

// ClaimCallbacks leases up to limit due deliveries, oldest first, as
// ClaimOutbox does for Slack: each claim counts as an attempt and moves the
// row's next attempt lease into the future, so a crashed worker's rows come
// back by themselves and replicas never claim the same row at once.
func (l *Ledger) ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]Callback, error) {
	claimed, err := alone(ctx, l, func(ex Executor) ([]Callback, error) { return ex.ClaimCallbacks(ctx, limit, lease) })
	if err != nil {
		return nil, err
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return claimed, nil
}

// MarkCallbackDelivered records a delivery the agent acknowledged with
// status. claimed is the row as ClaimCallbacks returned it: its lease
// (NextAttemptAt) identifies the attempt, so an attempt that ends after a
// redrive (which moves the row's next attempt to now) records nothing, and
// the redriven delivery is still sent.
func (l *Ledger) MarkCallbackDelivered(ctx context.Context, claimed Callback, status int) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.MarkCallbackDelivered(ctx, claimed, status) })
}

// RetryCallback records a failed attempt (status 0: no answer) and puts the
// delivery back after delay, or fails it for good once its retry window has
// passed. It returns the state the row is left in, or ErrNotFound when the
// attempt is no longer the row's (a redrive or a later claim took it over).
func (l *Ledger) RetryCallback(ctx context.Context, p RetryCallbackParams) (CallbackState, error) {
	return alone(ctx, l, func(ex Executor) (CallbackState, error) { return ex.RetryCallback(ctx, p) })
}

// RenewCallback keeps the claim on a delivery still being made for lease
// more and returns the claim as it now stands (its new NextAttemptAt
// identifies the attempt from then on), or ErrNotFound when the attempt is
// no longer the row's (a redrive or a later claim took it over).
func (l *Ledger) RenewCallback(ctx context.Context, claimed Callback, lease time.Duration) (Callback, error) {
	at, err := alone(ctx, l, func(ex Executor) (time.Time, error) { return ex.RenewCallback(ctx, claimed, lease) })
	if err != nil {
		return claimed, err
	}
	claimed.NextAttemptAt = at
	return claimed, nil
}

// RedriveCallback sends the request's newest delivery again, under the same
// delivery id: it becomes pending and due now, with a fresh retry window,
// and its attempts start again from 0, so the backoff restarts from its
// first delay (a redrive follows a fix at the agent's end; the delivery
// should not wait out the hour its failures had reached). Its last status
// and error stay until the next attempt. ok is false when the request has
// no delivery.
func (l *Ledger) RedriveCallback(ctx context.Context, requestID string) (cb Callback, ok bool, err error) {
	if !IsUUID(requestID) {
		return Callback{}, false, nil
	}
	err = l.driver.Write(ctx, func(ex Executor) error {
		cb, ok, err = ex.RedriveCallback(ctx, requestID, CallbackRetryWindow)
		return err
	})
	return cb, ok, err
}

// RetryCallbackParams is a failed attempt at Claimed (Status 0: no answer)
// and how long to wait before the next.
type RetryCallbackParams struct {
	Claimed Callback
	Delay   time.Duration
	Status  int
	Reason  string
}

package surface

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// View is everything a round's card shows, read from the ledger; every
// surface renders the same View.
type View struct {
	Request   store.Request
	Round     int
	State     string // store.CardStateOf
	Decision  *store.Decision
	Execution *store.Execution
	Tool      approvals.Tool
	Votes     []store.Vote // the round's, oldest first
	Approvers []string     // the request's (frozen) approvers
	// Grant is the standing grant that approved the round, when one did.
	Grant *store.Grant
	// Preview is what the write changes, as its tool's preview endpoint
	// said (nil: none asked yet); Change renders it.
	Preview *store.Preview
}

// Settled reports whether the card can no longer change.
func (v View) Settled() bool {
	switch {
	case v.State == "superseded", store.Settled(store.RequestStatus(v.State), ""):
		return true
	case v.Execution != nil:
		return store.Settled(store.RequestApproved, v.Execution.State)
	}
	return false
}

// Open reports whether the card still has something to ask or show a
// reviewer: its request is not settled, and not pending past its expiry
// (the sweep has yet to record it expired).
func (v View) Open(now time.Time) bool {
	if v.Settled() {
		return false
	}
	return v.Request.Status != store.RequestPending || now.Before(v.Request.ExpiresAt)
}

// Tools is what a View needs of review (approvals.Service): the tool's
// settings and the request's approvers.
type Tools interface {
	Tool(name string) (approvals.Tool, bool)
	Approvers(req store.Request) []string
}

// Cards is what a View is read from (a store.Store).
type Cards interface {
	RequestByID(ctx context.Context, id string) (store.Request, error)
	CardState(ctx context.Context, requestID string, round int) (string, error)
	DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error)
	ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error)
	VotesFor(ctx context.Context, requestID string, round int) ([]store.Vote, error)
	GrantByID(ctx context.Context, id string) (store.Grant, error)
	PreviewFor(ctx context.Context, requestID string) (store.Preview, error)
}

// Load reads what a round's card must show.
func Load(ctx context.Context, db Cards, tools Tools, requestID string, round int) (View, error) {
	req, err := db.RequestByID(ctx, requestID)
	if err != nil {
		return View{}, err
	}
	state, err := db.CardState(ctx, requestID, round)
	if err != nil {
		return View{}, err
	}
	v := View{Request: req, Round: round, State: state}
	v.Tool, _ = tools.Tool(req.Tool)
	v.Approvers = tools.Approvers(req)
	if v.Votes, err = db.VotesFor(ctx, requestID, round); err != nil {
		return View{}, err
	}
	if v.Tool.Preview != nil { // only a tool with a preview endpoint has one
		if p, err := db.PreviewFor(ctx, requestID); err == nil {
			v.Preview = &p
		} else if !errors.Is(err, store.ErrNotFound) {
			return View{}, err
		}
	}
	d, err := db.DecisionFor(ctx, requestID, round)
	switch {
	case err == nil:
		v.Decision = &d
		if d.Via == approvals.ViaGrant {
			g, err := db.GrantByID(ctx, strings.TrimPrefix(d.DecidedBy, "grant:"))
			switch {
			case err == nil:
				v.Grant = &g
			case !errors.Is(err, store.ErrNotFound):
				return View{}, err
			}
		}
		e, err := db.ExecutionForDecision(ctx, d.ID)
		switch {
		case err == nil:
			v.Execution = &e
		case !errors.Is(err, store.ErrNotFound):
			return View{}, err
		}
	case !errors.Is(err, store.ErrNotFound):
		return View{}, err
	}
	return v, nil
}

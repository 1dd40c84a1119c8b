package store

import (
	"fmt"
	"time"
)

// Card is the message showing one round of a request on one review
// surface. Ref is the surface's own reference to it, opaque to the ledger
// (Slack's is "channel/ts"), by which the surface updates it and replies in
// its thread.
type Card struct {
	RequestID     string
	Round         int
	Surface       string
	Ref           string
	RenderedState string
	Settled       bool
	// PostedAt is when the card was first recorded as posted: when its
	// reviewers could first see it.
	PostedAt time.Time
}

// MarkCardRenderedParams is the state a request round's card on Surface
// now shows.
type MarkCardRenderedParams struct {
	RequestID string
	Round     int
	Surface   string
	State     string
	Settled   bool
}

// CardStateOf is what the card of a request's round must show, given the
// request as it is now and, when it is approved, the execution its decision
// in round created (nil: none): "superseded" for an earlier round, the
// request's status, or "approved/<execution state>/<attempts>". The
// convergence sweep compares it with the state a card last rendered
// (Card.RenderedState), so the drivers compute it in SQL beside the rows
// (PostgreSQL's countersign_card_state, SQLite's card_state_of); the
// contract suite holds both to this on every state.
func CardStateOf(req Request, round int, e *Execution) string {
	switch {
	case req.Round > round:
		return "superseded"
	case req.Status != RequestApproved:
		return string(req.Status)
	case e == nil:
		return string(RequestApproved) + "/none"
	}
	return fmt.Sprintf("%s/%s/%d", RequestApproved, e.State, e.Attempts)
}

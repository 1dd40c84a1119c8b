package lookup

import (
	"context"
	"errors"
	"strings"

	"github.com/countersign/countersign/store"
)

// Lookup limits.
const (
	MaxMatches = 5  // an ambiguous prefix or business id lists this many
	MaxListed  = 10 // pending and unknown list this many
)

// AnswerKind is what an Answer holds.
type AnswerKind string

// Answer kinds.
const (
	AnswerHelp       AnswerKind = "help"       // Note may say why help was given
	AnswerDetail     AnswerKind = "detail"     // one request in full: Detail
	AnswerMatches    AnswerKind = "matches"    // several requests matched Match/Value: Requests, More
	AnswerNone       AnswerKind = "none"       // nothing matched Match/Value
	AnswerPending    AnswerKind = "pending"    // requests waiting for a decision: Requests
	AnswerUnresolved AnswerKind = "unresolved" // writes in doubt: Unresolved
)

// Match is what a key or id lookup compared against.
type Match string

// Matches.
const (
	MatchID        Match = "id"         // a request id
	MatchKeyPrefix Match = "key_prefix" // the start of a key
	MatchEffect    Match = "effect"     // a string value anywhere in the effect
)

// Answer is the result of one lookup.
type Answer struct {
	Kind  AnswerKind
	Note  string // AnswerHelp: why the text was not understood, if it was not "help"
	Match Match  // AnswerMatches, AnswerNone: what was compared
	Value string // AnswerMatches, AnswerNone: what was looked for
	// Requests are the matches (soonest expiry first for AnswerPending).
	Requests []store.Request
	// More is true when more than MaxMatches requests matched; Requests holds
	// the first MaxMatches.
	More       bool
	Unresolved []store.Unresolved
	Detail     *Detail
}

// Detail is everything known about one request: the standing decision, every
// execution and attempt, and the audit timeline.
type Detail struct {
	Request    store.Request
	Decision   *store.Decision // the latest decided round's, nil if none
	Executions []store.Execution
	Events     []store.Event // oldest first, all of them
}

// Run answers a parsed query from the store.
func Run(ctx context.Context, db store.Store, q Query) (Answer, error) {
	switch q.Kind {
	case QueryHelp:
		return Answer{Kind: AnswerHelp, Note: q.Note}, nil
	case QueryPending:
		reqs, err := db.PendingRequests(ctx, MaxListed)
		if err != nil {
			return Answer{}, err
		}
		return Answer{Kind: AnswerPending, Requests: reqs}, nil
	case QueryUnknown:
		us, err := db.UnresolvedExecutions(ctx, MaxListed)
		if err != nil {
			return Answer{}, err
		}
		return Answer{Kind: AnswerUnresolved, Unresolved: us}, nil
	case QueryID:
		req, err := db.RequestByID(ctx, q.Value)
		if errors.Is(err, store.ErrNotFound) {
			return Answer{Kind: AnswerNone, Match: MatchID, Value: q.Value}, nil
		} else if err != nil {
			return Answer{}, err
		}
		return detailAnswer(ctx, db, req)
	case QueryKey:
		reqs, err := db.RequestsByKeyPrefix(ctx, q.Value, MaxMatches+1)
		if err != nil {
			return Answer{}, err
		}
		if q.Suffix != "" {
			reqs = filterSuffix(reqs, q.Suffix)
		}
		return matches(ctx, db, reqs, MatchKeyPrefix, q.Value)
	case QueryHexPrefix:
		prefix := "wa_" + strings.ToLower(q.Value)
		reqs, err := db.RequestsByKeyPrefix(ctx, prefix, MaxMatches+1)
		if err != nil {
			return Answer{}, err
		}
		if len(reqs) > 0 {
			return matches(ctx, db, reqs, MatchKeyPrefix, prefix)
		}
		return business(ctx, db, q.Value)
	case QueryBusiness:
		return business(ctx, db, q.Value)
	}
	return Answer{Kind: AnswerHelp}, nil
}

// Find parses text and runs it.
func Find(ctx context.Context, db store.Store, text string) (Query, Answer, error) {
	q := Parse(text)
	a, err := Run(ctx, db, q)
	return q, a, err
}

// business finds requests by a client-sent key or a string in the effect.
func business(ctx context.Context, db store.Store, value string) (Answer, error) {
	if req, err := db.RequestByKey(ctx, value); err == nil {
		return detailAnswer(ctx, db, req)
	} else if !errors.Is(err, store.ErrNotFound) {
		return Answer{}, err
	}
	reqs, err := db.RequestsByEffectString(ctx, value, MaxMatches+1)
	if err != nil {
		return Answer{}, err
	}
	return matches(ctx, db, reqs, MatchEffect, value)
}

// matches shows one request in full, lists several, or says none matched.
func matches(ctx context.Context, db store.Store, reqs []store.Request, m Match, value string) (Answer, error) {
	switch len(reqs) {
	case 0:
		return Answer{Kind: AnswerNone, Match: m, Value: value}, nil
	case 1:
		return detailAnswer(ctx, db, reqs[0])
	}
	a := Answer{Kind: AnswerMatches, Match: m, Value: value, Requests: reqs}
	if len(reqs) > MaxMatches {
		a.Requests, a.More = reqs[:MaxMatches], true
	}
	return a, nil
}

func detailAnswer(ctx context.Context, db store.Store, req store.Request) (Answer, error) {
	d, err := Load(ctx, db, req)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Kind: AnswerDetail, Detail: &d}, nil
}

// Load reads a request's decision, executions and timeline (one round trip
// on PostgreSQL).
func Load(ctx context.Context, db store.Store, req store.Request) (Detail, error) {
	h, err := db.HistoryOf(ctx, req.ID)
	if err != nil {
		return Detail{}, err
	}
	return Detail{Request: req, Decision: h.Decision, Executions: h.Executions, Events: h.Events}, nil
}

// Outcome is where the request stands, as a reader wants it first: its
// status, and once approved, what became of the write ("approved, succeeded").
func (d Detail) Outcome() string {
	e := d.LatestExecution()
	if d.Request.Status != store.RequestApproved || e == nil {
		return string(d.Request.Status)
	}
	return string(d.Request.Status) + ", " + string(e.State)
}

// LatestExecution is the request's newest execution, or nil.
func (d Detail) LatestExecution() *store.Execution {
	if len(d.Executions) == 0 {
		return nil
	}
	return &d.Executions[len(d.Executions)-1]
}

func filterSuffix(reqs []store.Request, suffix string) []store.Request {
	out := reqs[:0:0]
	for _, r := range reqs {
		if strings.HasSuffix(r.Key, suffix) {
			out = append(out, r)
		}
	}
	return out
}

package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Grant is a standing approval: a reviewer's approval of one request that
// also approves, until ExpiresAt or a revocation, its agent's later writes
// with its tool whose Match fields equal the approved effect's and whose
// AmountField, when set, is at most AmountCeiling. Which intents it covers
// is decided in approvals; the store keeps it and ends it.
type Grant struct {
	ID        string
	Tool      string
	Agent     string
	Grantor   string
	RequestID string // the request whose approval granted it
	Round     int
	// Match maps a dotted path of the effect to the approved effect's
	// value there (JSON).
	Match         map[string]json.RawMessage
	AmountField   string
	AmountCeiling *string // exact decimal text; nil: no ceiling
	CreatedAt     time.Time
	ExpiresAt     time.Time
	RevokedAt     *time.Time
	RevokedBy     string
}

// LiveAt reports whether the grant approves anything at t: not revoked,
// not expired.
func (g Grant) LiveAt(t time.Time) bool { return g.RevokedAt == nil && t.Before(g.ExpiresAt) }

// NewGrant is a grant to create with the approval that decides a round
// (VoteParams.Grant): the tool, agent, grantor, request and times are the
// round's.
type NewGrant struct {
	// ID is the grant's; "" has one made (NewGrantID).
	ID            string
	Match         map[string]json.RawMessage
	AmountField   string
	AmountCeiling *string
	TTL           time.Duration
}

// NewGrantID returns a short id no one can guess: 16 characters of
// base32 (80 random bits).
func NewGrantID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return strings.ToLower(base32.StdEncoding.EncodeToString(b[:]))
}

// ListGrantsParams selects grants for a listing, newest first.
type ListGrantsParams struct {
	// Grantor keeps one grantor's; "" keeps everyone's.
	Grantor string
	// LiveAt keeps the grants live at that time; nil keeps every grant,
	// ended or not.
	LiveAt *time.Time
	Limit  int
}

// RevokeGrantParams ends a live grant.
type RevokeGrantParams struct {
	ID string
	By string
	// Grantor, when set, revokes only a grant of that grantor (a reviewer
	// ending their own); "" revokes anyone's (an admin).
	Grantor string
	Now     *time.Time
}

// Grant audit events, on the request whose approval granted it.
const (
	EventGrantCreated EventKind = "grant_created"
	EventGrantRevoked EventKind = "grant_revoked"
)

// createGrant records g, granted by the vote that decided req's round with
// decision d, and audits it, in the caller's transaction.
func createGrant(ctx context.Context, ex Executor, req Request, d Decision, ng NewGrant) (Grant, error) {
	if ng.TTL <= 0 {
		return Grant{}, fmt.Errorf("creating grant: a grant needs a positive duration, not %s", ng.TTL)
	}
	g := Grant{ID: ng.ID, Tool: req.Tool, Agent: req.RequestedBy, Grantor: d.DecidedBy, RequestID: req.ID, Round: d.Round,
		Match: ng.Match, AmountField: ng.AmountField, AmountCeiling: ng.AmountCeiling,
		CreatedAt: d.DecidedAt, ExpiresAt: d.DecidedAt.Add(ng.TTL)}
	if g.ID == "" {
		g.ID = NewGrantID()
	}
	if g.Match == nil {
		g.Match = map[string]json.RawMessage{}
	}
	if err := ex.InsertGrant(ctx, g); err != nil {
		return Grant{}, fmt.Errorf("creating grant: %w", err)
	}
	data := map[string]any{"grant_id": g.ID, "agent": g.Agent, "match": g.Match,
		"expires_at": g.ExpiresAt.UTC().Format(time.RFC3339Nano), "round": g.Round}
	if g.AmountCeiling != nil {
		data["amount_field"], data["amount_ceiling"] = g.AmountField, *g.AmountCeiling
	}
	err := write(ctx, ex, []Event{{RequestID: req.ID, At: d.DecidedAt, Actor: g.Grantor, Kind: EventGrantCreated, Data: data}}, nil)
	return g, err
}

// RevokeGrant ends a live grant, as p.By, and audits it on the request
// that granted it, in one transaction. revoked is false, with the grant as
// it stands, when it had ended already (revoked, expired) or p.Grantor is
// not its grantor; a grant that does not exist is ErrNotFound.
func (l *Ledger) RevokeGrant(ctx context.Context, p RevokeGrantParams) (g Grant, revoked bool, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		var ok bool
		g, ok, err = ex.RevokeGrant(ctx, p)
		if err != nil {
			return fmt.Errorf("revoking grant: %w", err)
		}
		if !ok {
			g, err = ex.GrantByID(ctx, p.ID)
			return err
		}
		revoked = true
		return write(ctx, ex, []Event{{RequestID: g.RequestID, At: *g.RevokedAt, Actor: p.By, Kind: EventGrantRevoked,
			Data: map[string]any{"grant_id": g.ID, "grantor": g.Grantor}}}, nil)
	})
	if err != nil {
		return Grant{}, false, err
	}
	return g, revoked, nil
}

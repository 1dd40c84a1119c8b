package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// grantAsked is the grant the tests' deciding approvals ask for.
func grantAsked(ttl time.Duration) *store.NewGrant {
	ceiling := "42.50"
	return &store.NewGrant{Match: map[string]json.RawMessage{"customer": json.RawMessage(`"cus_1"`), "n": json.RawMessage(`7`)},
		AmountField: "amount", AmountCeiling: &ceiling, TTL: ttl}
}

// A standing grant is created by the approval that decides a round, in its
// transaction, with the round's tool, agent and grantor and an expiry
// counted from the decision; it is read back exactly, listed while live,
// and audited on the request that granted it.
func testGrantIsCreatedByTheDecidingApproval(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	req := insertWithPolicy(t, b, "wa_grant", 1)
	p := decide(req, store.VerdictApprove, "U1")
	p.Now, p.Grant = &now, grantAsked(time.Hour)
	res, err := b.Vote(ctx, p)
	if err != nil || !res.Decided || res.Grant == nil {
		t.Fatalf("Vote with a grant = %+v, %v", res, err)
	}
	g := *res.Grant
	if g.Tool != tool || g.Agent != "agent" || g.Grantor != "U1" || g.RequestID != req.ID || g.Round != 1 ||
		!g.CreatedAt.Equal(now) || !g.ExpiresAt.Equal(now.Add(time.Hour)) || len(g.ID) < 16 {
		t.Fatalf("grant = %+v", g)
	}
	got, err := b.GrantByID(ctx, g.ID)
	if err != nil || got.Tool != tool || got.Grantor != "U1" || string(got.Match["customer"]) != `"cus_1"` ||
		string(got.Match["n"]) != `7` || got.AmountField != "amount" || got.AmountCeiling == nil || *got.AmountCeiling != "42.50" ||
		!got.ExpiresAt.Equal(g.ExpiresAt) || got.RevokedAt != nil || !got.LiveAt(now) {
		t.Fatalf("GrantByID = %+v, %v", got, err)
	}
	for _, c := range []struct {
		agent string
		at    time.Time
		want  int
	}{{"agent", now, 1}, {"agent", now.Add(59 * time.Minute), 1}, {"agent", now.Add(time.Hour), 0}, {"other", now, 0}} {
		if live, err := b.LiveGrants(ctx, tool, c.agent, c.at); err != nil || len(live) != c.want {
			t.Errorf("LiveGrants(%s, %s) = %d, %v; want %d", c.agent, c.at.Sub(now), len(live), err, c.want)
		}
	}
	later := now.Add(2 * time.Hour)
	for _, c := range []struct {
		p    store.ListGrantsParams
		want int
	}{
		{store.ListGrantsParams{Grantor: "U1", LiveAt: &now, Limit: 10}, 1},
		{store.ListGrantsParams{Grantor: "U2", LiveAt: &now, Limit: 10}, 0},
		{store.ListGrantsParams{LiveAt: &later, Limit: 10}, 0},
		{store.ListGrantsParams{Limit: 10}, 1},
	} {
		if list, err := b.ListGrants(ctx, c.p); err != nil || len(list) != c.want {
			t.Errorf("ListGrants(%+v) = %d, %v; want %d", c.p, len(list), err, c.want)
		}
	}
	if kinds := eventKinds(t, b, req.ID); countKind(kinds, string(store.EventGrantCreated)) != 1 {
		t.Errorf("events = %v, want one grant_created", kinds)
	}
	if _, err := b.GrantByID(ctx, "nosuchgrant"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GrantByID of nothing = %v", err)
	}

	// An approval that does not decide its round grants nothing.
	two := insertWithPolicy(t, b, "wa_grant_two", 2)
	p = decide(two, store.VerdictApprove, "U1")
	p.Grant = grantAsked(time.Hour)
	if res, err := b.Vote(ctx, p); err != nil || res.Decided || res.Grant != nil {
		t.Fatalf("an approval that leaves the round open = %+v, %v", res, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM grants`); n != 1 {
		t.Errorf("grants = %d, want 1", n)
	}
}

// A grant is revoked once, by its grantor or by anyone when no grantor is
// required; another grantor, a second revocation or one after the expiry
// move nothing; the revocation is audited once.
func testGrantRevokesOnce(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	grant := func(key string) store.Grant {
		req := insertWithPolicy(t, b, key, 1)
		p := decide(req, store.VerdictApprove, "U1")
		p.Now, p.Grant = &now, grantAsked(time.Hour)
		res, err := b.Vote(ctx, p)
		if err != nil || res.Grant == nil {
			t.Fatalf("Vote with a grant = %+v, %v", res, err)
		}
		return *res.Grant
	}
	g := grant("wa_grant_revoke")
	if got, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: g.ID, By: "U2", Grantor: "U2"}); err != nil || revoked || got.RevokedAt != nil {
		t.Fatalf("revoked by another grantor = %+v, %v, %v", got, revoked, err)
	}
	got, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: g.ID, By: "U1", Grantor: "U1"})
	if err != nil || !revoked || got.RevokedAt == nil || got.RevokedBy != "U1" || got.LiveAt(now) {
		t.Fatalf("revoked by its grantor = %+v, %v, %v", got, revoked, err)
	}
	if again, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: g.ID, By: "UADMIN"}); err != nil || revoked ||
		again.RevokedBy != "U1" || !again.RevokedAt.Equal(*got.RevokedAt) {
		t.Fatalf("revoked again = %+v, %v, %v", again, revoked, err)
	}
	if live, err := b.LiveGrants(ctx, tool, "agent", now); err != nil || len(live) != 0 {
		t.Errorf("live after revocation = %d, %v", len(live), err)
	}
	if kinds := eventKinds(t, b, g.RequestID); countKind(kinds, string(store.EventGrantRevoked)) != 1 {
		t.Errorf("events = %v, want one grant_revoked", kinds)
	}
	if _, _, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: "nosuchgrant", By: "U1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking nothing = %v", err)
	}

	// An admin (no grantor required) revokes anyone's; an expired grant
	// stays as it ended.
	other := grant("wa_grant_admin")
	if got, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: other.ID, By: "UADMIN"}); err != nil || !revoked || got.RevokedBy != "UADMIN" {
		t.Fatalf("revoked by an admin = %+v, %v, %v", got, revoked, err)
	}
	expired := grant("wa_grant_expired")
	after := expired.ExpiresAt.Add(time.Second)
	if got, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: expired.ID, By: "U1", Now: &after}); err != nil || revoked || got.RevokedAt != nil {
		t.Fatalf("revoking an expired grant = %+v, %v, %v", got, revoked, err)
	}
}

// An intent decided by a grant at intake is approved only while the grant
// is live in the intake's transaction: a grant revoked since it was read
// leaves the request pending with its card owed.
func testIntakeHoldsTheGrant(t *testing.T, b *Backend) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	src := insertWithPolicy(t, b, "wa_grant_source", 1)
	p := decide(src, store.VerdictApprove, "U1")
	p.Now, p.Grant = &now, grantAsked(time.Hour)
	res, err := b.Vote(ctx, p)
	if err != nil || res.Grant == nil {
		t.Fatalf("Vote with a grant = %+v, %v", res, err)
	}
	g := *res.Grant
	byGrant := func(key string) store.Request {
		nr := newRequest(key, "sha256:b")
		nr.Decided = &store.AutoDecision{Verdict: store.VerdictApprove, DecidedBy: "grant:" + g.ID, Via: "grant",
			MaxAttempts: 3, Card: true, Grant: g.ID, Data: map[string]any{"grant_id": g.ID, "grantor": g.Grantor}}
		out, err := b.Intake(ctx, key, func() (store.NewRequest, error) { return nr, nil }, nil)
		if err != nil || !out.Inserted {
			t.Fatalf("Intake(%s) = %+v, %v", key, out, err)
		}
		return out.Request
	}
	live := byGrant("wa_grant_live")
	if live.Status != store.RequestApproved {
		t.Fatalf("intake under a live grant: status %s", live.Status)
	}
	if d, err := b.DecisionFor(ctx, live.ID, 1); err != nil || d.DecidedBy != "grant:"+g.ID || d.Via != "grant" {
		t.Fatalf("decision = %+v, %v", d, err)
	}
	if _, err := b.LatestExecution(ctx, live.ID); err != nil {
		t.Fatalf("no execution under a live grant: %v", err)
	}
	if _, revoked, err := b.RevokeGrant(ctx, store.RevokeGrantParams{ID: g.ID, By: "U1"}); err != nil || !revoked {
		t.Fatalf("revoke = %v, %v", revoked, err)
	}
	ended := byGrant("wa_grant_ended")
	if ended.Status != store.RequestPending {
		t.Fatalf("intake under a revoked grant: status %s", ended.Status)
	}
	if _, err := b.DecisionFor(ctx, ended.ID, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("decision under a revoked grant: %v", err)
	}
	if pending, err := b.PostPending(ctx, ended.ID, 1); err != nil || !pending {
		t.Errorf("card post of the undecided request queued = %v, %v", pending, err)
	}
}

// Intakes under a grant racing its revocation each end whole: approved by
// the grant with its execution, or pending with its card owed and no
// decision; none fails, and once the revocation has returned no intake is
// approved by the grant.
func testIntakesRacingARevocationEndWhole(t *testing.T, b *Backend) {
	ctx := context.Background()
	src := insertWithPolicy(t, b, "wa_grant_race_source", 1)
	p := decide(src, store.VerdictApprove, "U1")
	p.Grant = grantAsked(time.Hour)
	res, err := b.Vote(ctx, p)
	if err != nil || res.Grant == nil {
		t.Fatalf("Vote with a grant = %+v, %v", res, err)
	}
	g := *res.Grant
	intake := func(key string) (store.Request, error) {
		nr := newRequest(key, "sha256:b")
		nr.Decided = &store.AutoDecision{Verdict: store.VerdictApprove, DecidedBy: "grant:" + g.ID, Via: "grant",
			MaxAttempts: 3, Card: true, Grant: g.ID}
		out, err := b.Intake(ctx, key, func() (store.NewRequest, error) { return nr, nil }, nil)
		return out.Request, err
	}
	const n = 16
	reqs := make([]store.Request, n)
	errs := make([]error, n+1)
	Release(n+1, func(i int) {
		if i == n {
			_, _, errs[i] = b.RevokeGrant(ctx, store.RevokeGrantParams{ID: g.ID, By: "U1"})
			return
		}
		reqs[i], errs[i] = intake(fmt.Sprintf("wa_grant_race_%d", i))
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	for _, req := range reqs {
		_, decErr := b.DecisionFor(ctx, req.ID, 1)
		execs, err := b.ExecutionsFor(ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		posted, err := b.PostPending(ctx, req.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		switch req.Status {
		case store.RequestApproved:
			if decErr != nil || len(execs) != 1 {
				t.Errorf("%s approved with decision %v and %d executions", req.Key, decErr, len(execs))
			}
		case store.RequestPending:
			if !errors.Is(decErr, store.ErrNotFound) || len(execs) != 0 || !posted {
				t.Errorf("%s pending with decision %v, %d executions, card post queued %v", req.Key, decErr, len(execs), posted)
			}
		default:
			t.Errorf("%s is %s", req.Key, req.Status)
		}
	}
	if after, err := intake("wa_grant_race_after"); err != nil || after.Status != store.RequestPending {
		t.Errorf("an intake after the revocation = %s, %v", after.Status, err)
	}
}

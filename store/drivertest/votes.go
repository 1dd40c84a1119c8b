package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
)

// insertWithPolicy inserts a request whose frozen policy needs n approvals.
func insertWithPolicy(t *testing.T, s store.Store, key string, n int) store.Request {
	t.Helper()
	p := newRequest(key, "sha256:b")
	tier := 0
	p.Policy = store.Policy{Approvals: n, Approvers: []string{"S0LEADS", "U9"}, Tier: &tier}
	return insert(t, s, p)
}

func vote(t *testing.T, s store.Store, req store.Request, verdict store.Verdict, by, reason string) store.VoteResult {
	t.Helper()
	p := decide(req, verdict, by)
	p.Reason = reason
	res, err := s.Vote(context.Background(), p)
	if err != nil {
		t.Fatalf("Vote(%s, %s) = %v", by, verdict, err)
	}
	return res
}

func testPolicyIsStoredWithTheRequest(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertWithPolicy(t, b, "wa_policy", 2)
	for _, got := range []store.Request{req, must(b.RequestByID(ctx, req.ID)), must(b.RequestByKey(ctx, req.Key))} {
		if got.Policy.Approvals != 2 || strings.Join(got.Policy.Approvers, ",") != "S0LEADS,U9" ||
			got.Policy.Tier == nil || *got.Policy.Tier != 0 {
			t.Errorf("policy = %+v", got.Policy)
		}
	}
	batch, err := b.InsertRequests(ctx, []store.NewRequest{{Key: "wa_policy_batch", BasisHash: "b", RunID: "r", Step: []byte(`1`),
		Tool: tool, Snapshot: []byte(`{}`), PayloadHash: "h", RequestedBy: "agent", TTL: 3600e9,
		Policy: store.Policy{Approvals: 3}}}, nil)
	if err != nil || batch[0].Policy.Approvals != 3 || batch[0].Policy.Approvers != nil || batch[0].Policy.Tier != nil {
		t.Errorf("batch insert policy = %+v, %v", batch, err)
	}
	// A request stored without a policy needs one approval.
	plain := insertRequest(t, b, "wa_policy_none")
	if plain.Policy.Needed() != 1 {
		t.Errorf("default policy = %+v", plain.Policy)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func testQuorumDecidesOnTheNthDistinctApproval(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertWithPolicy(t, b, "wa_quorum", 2)
	first := vote(t, b, req, store.VerdictApprove, "U1", "")
	if !first.Open || !first.Cast || first.Decided || len(first.Votes) != 1 || first.Request.Status != store.RequestPending {
		t.Fatalf("first approval = %+v", first)
	}
	// A vote is a visible change: the request's version grows.
	if after := must(b.RequestByID(ctx, req.ID)); after.Version <= req.Version {
		t.Errorf("version after a vote = %d, before %d", after.Version, req.Version)
	}
	again := vote(t, b, req, store.VerdictApprove, "U1", "")
	if !again.Open || again.Cast || again.Decided || again.Vote.ID != first.Vote.ID || len(again.Votes) != 1 {
		t.Fatalf("repeated approval = %+v", again)
	}
	// A repeated click with the other verdict changes nothing either.
	if flip := vote(t, b, req, store.VerdictReject, "U1", "changed my mind"); flip.Cast || flip.Decided || flip.Vote.Verdict != store.VerdictApprove {
		t.Fatalf("flipped vote = %+v", flip)
	}
	second := vote(t, b, req, store.VerdictApprove, "U2", "")
	if !second.Cast || !second.Decided || second.Decision.DecidedBy != "U2" || second.Request.Status != store.RequestApproved || len(second.Votes) != 2 {
		t.Fatalf("second approval = %+v", second)
	}
	if late := vote(t, b, req, store.VerdictApprove, "U3", ""); late.Open || late.Cast {
		t.Fatalf("vote after the decision = %+v", late)
	}
	if n := b.Count(t, `SELECT count(*) FROM decisions`); n != 1 {
		t.Errorf("decisions = %d", n)
	}
	if execs, err := b.ExecutionsFor(ctx, req.ID); err != nil || len(execs) != 1 {
		t.Errorf("executions = %d, %v", len(execs), err)
	}
	if kinds := strings.Join(eventKinds(t, b, req.ID), ","); kinds != "requested,voted,voted,decided" {
		t.Errorf("events = %s", kinds)
	}
	votes, err := b.VotesFor(ctx, req.ID, 1)
	if err != nil || len(votes) != 2 || votes[0].Voter != "U1" || votes[1].Voter != "U2" || votes[0].Via != "slack" {
		t.Errorf("VotesFor = %+v, %v", votes, err)
	}
	// The first vote's update still waits when the second decides: it
	// draws the decision too, so the decision's update joins it.
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'update_card'`); n != 1 {
		t.Errorf("card updates = %d, want the first vote's, waiting", n)
	}
}

func testQuorumOneRejectDecidesWithItsReason(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertWithPolicy(t, b, "wa_quorum_reject", 3)
	vote(t, b, req, store.VerdictApprove, "U1", "")
	res := vote(t, b, req, store.VerdictReject, "U2", "amount looks wrong")
	if !res.Decided || res.Decision.Verdict != store.VerdictReject || res.Decision.Reason != "amount looks wrong" ||
		res.Request.Status != store.RequestRejected {
		t.Fatalf("reject = %+v", res)
	}
	d, err := b.LatestDecision(ctx, req.ID)
	if err != nil || d.Reason != "amount looks wrong" {
		t.Errorf("LatestDecision = %+v, %v", d, err)
	}
	votes, _ := b.VotesFor(ctx, req.ID, 1)
	if len(votes) != 2 || votes[1].Reason != "amount looks wrong" {
		t.Errorf("votes = %+v", votes)
	}
	if execs, _ := b.ExecutionsFor(ctx, req.ID); len(execs) != 0 {
		t.Errorf("a rejected request has %d executions", len(execs))
	}
}

// Voters racing on a 3-of-N: exactly one decision, by the third approval
// (or the first reject), and every vote that was cast is in the round.
func testQuorumUnderConcurrency(t *testing.T, b *Backend) {
	ctx := context.Background()
	for _, withReject := range []bool{false, true} {
		req := insertWithPolicy(t, b, fmt.Sprintf("wa_quorum_race_%v", withReject), 3)
		const voters = 8
		results := make([]store.VoteResult, voters)
		errs := make([]error, voters)
		Release(voters, func(i int) {
			verdict := store.VerdictApprove
			if withReject && i == voters-1 {
				verdict = store.VerdictReject
			}
			results[i], errs[i] = b.Vote(ctx, decide(req, verdict, fmt.Sprintf("U%d", i)))
		})
		deciders := 0
		for i := range voters {
			if errs[i] != nil {
				t.Fatalf("voter %d: %v", i, errs[i])
			}
			if results[i].Decided {
				deciders++
			}
		}
		if deciders != 1 {
			t.Fatalf("reject %v: %d votes decided, want 1", withReject, deciders)
		}
		d, err := b.DecisionFor(ctx, req.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		votes, _ := b.VotesFor(ctx, req.ID, 1)
		if d.Verdict == store.VerdictApprove && (store.Approvals(votes) != 3 || votes[len(votes)-1].Voter != d.DecidedBy) {
			t.Errorf("approved with votes %+v by %s", votes, d.DecidedBy)
		}
		if d.Verdict == store.VerdictReject && (d.DecidedBy != fmt.Sprintf("U%d", voters-1) || store.Approvals(votes) >= 3) {
			t.Errorf("rejected by %s with votes %+v", d.DecidedBy, votes)
		}
		if kinds := eventKinds(t, b, req.ID); countKind(kinds, "decided") != 1 || countKind(kinds, "voted") != len(votes) {
			t.Errorf("events = %v for %d votes", kinds, len(votes))
		}
		wantExec := 0
		if d.Verdict == store.VerdictApprove {
			wantExec = 1
		}
		if execs, _ := b.ExecutionsFor(ctx, req.ID); len(execs) != wantExec {
			t.Errorf("executions = %d, want %d", len(execs), wantExec)
		}
	}
}

func testVoteRefusesStaleRoundOrHash(t *testing.T, b *Backend) {
	req := insertWithPolicy(t, b, "wa_vote_stale", 2)
	stale := req
	stale.PayloadHash = "sha256:other"
	if res := vote(t, b, stale, store.VerdictApprove, "U1", ""); res.Open || res.Cast {
		t.Errorf("stale hash = %+v", res)
	}
	stale = req
	stale.Round = 2
	if res := vote(t, b, stale, store.VerdictReject, "U1", ""); res.Open || res.Cast {
		t.Errorf("stale round = %+v", res)
	}
	if n := b.Count(t, `SELECT count(*) FROM votes`); n != 0 {
		t.Errorf("votes = %d", n)
	}
}

package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// editOf is approverA's edit of req to effect, as the card showed req.
func editOf(req store.Request, by, effect string) Edit {
	return Edit{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash, Effect: json.RawMessage(effect),
		EditedBy: by, Via: "console"}
}

// withTiers gives billing.credit a bigger tier: above 10000 cents, two
// approvals.
func (b *bundle) withTiers(t testing.TB) {
	t.Helper()
	tool := b.svc.Tools["billing.credit"]
	tool.Tiers = []Tier{{Name: "large", When: Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("10000")}, Approvals: 2}}
	b.svc.Tools = map[string]Tool{"billing.credit": tool, "deploy.release": b.svc.Tools["deploy.release"]}
}

// An approved edit is a new request whose key is derived from the edited
// effect (computed here by hand: sha256 of the RFC 8785 basis), linked both
// ways to the original, which settles as edited and never gets an
// execution; the edit's has one, and its approval is the editor's.
func TestApproveWithEditStoresANewRequestUnderTheEditedKey(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		orig := b.submit(t, nil)
		out, err := b.svc.ApproveWithEdit(b.ctx, editOf(orig, approverA, `{"invoice": "inv_8841", "amount_cents": 4300, "currency": "USD"}`))
		if err != nil {
			t.Fatalf("ApproveWithEdit: %v", err)
		}
		basis := `{"effect":{"amount_cents":4300,"currency":"USD","invoice":"inv_8841"},"run":"r-7f3a","step":6,"tool":"billing.credit"}`
		sum := sha256.Sum256([]byte(basis))
		wantKey := "wa_" + hex.EncodeToString(sum[:])
		if out.Edit.Key != wantKey || out.Edit.Key == orig.Key {
			t.Errorf("edit key = %s, want %s (original %s)", out.Edit.Key, wantKey, orig.Key)
		}
		if !out.Approved || out.Edit.Status != store.RequestApproved || out.Edit.Supersedes != orig.Key {
			t.Errorf("edit = %s approved %v supersedes %q", out.Edit.Status, out.Approved, out.Edit.Supersedes)
		}
		if !slices.Equal(out.Changed, []string{"amount_cents"}) {
			t.Errorf("changed = %v", out.Changed)
		}
		if string(out.Edit.Snapshot) != `{"amount_cents":4300,"currency":"USD","invoice":"inv_8841"}` ||
			out.Edit.RunID != orig.RunID || string(out.Edit.Step) != "6" || out.Edit.RequestedBy != orig.RequestedBy ||
			out.Edit.RequestedFor != orig.RequestedFor || out.Edit.Summary != orig.Summary {
			t.Errorf("edit = %+v", out.Edit)
		}
		got, err := b.store.RequestByID(b.ctx, orig.ID)
		if err != nil || got.Status != store.RequestEdited || got.SupersededBy != out.Edit.Key {
			t.Errorf("original = %s superseded by %q, %v", got.Status, got.SupersededBy, err)
		}
		d, err := b.store.LatestDecision(b.ctx, out.Edit.ID)
		if err != nil || d.DecidedBy != approverA || d.Via != "console" {
			t.Errorf("the edit's decision = %+v, %v", d, err)
		}
		b.expectCounts(t, map[string]int{
			"SELECT count(*) FROM executions WHERE request_id = '" + orig.ID + "'":     0,
			"SELECT count(*) FROM executions WHERE request_id = '" + out.Edit.ID + "'": 1,
			"SELECT count(*) FROM decisions WHERE request_id = '" + orig.ID + "'":      0,
		})
		// The original is settled: approving it now is already_decided.
		if _, err := b.svc.Decide(b.ctx, approve(orig, approverB)); RefusalFor(err).Code != CodeAlreadyDecided {
			t.Errorf("approving the edited original = %v, want already_decided", err)
		}
	})
}

// An edit is tiered by the policy in force: a bigger amount needs the bigger
// tier's two approvals, the editor's counting as one; an edit into a
// smaller tier still needs what the original needed.
func TestApproveWithEditIsReTiered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.withTiers(t)
	orig := b.submit(t, nil) // 4200 cents: one approval
	if orig.Policy.Needed() != 1 {
		t.Fatalf("the original needs %d approvals", orig.Policy.Needed())
	}
	out, err := b.svc.ApproveWithEdit(b.ctx, editOf(orig, approverA, `{"invoice":"inv_8841","amount_cents":42000,"currency":"USD"}`))
	if err != nil {
		t.Fatalf("ApproveWithEdit: %v", err)
	}
	if out.Approved || out.Edit.Status != store.RequestPending || out.Edit.Policy.Needed() != 2 || out.Edit.Policy.TierName != "large" {
		t.Errorf("edit = %s approved %v needs %d (tier %q)", out.Edit.Status, out.Approved, out.Edit.Policy.Needed(), out.Edit.Policy.TierName)
	}
	if len(out.Votes) != 1 || out.Votes[0].Voter != approverA || out.Progress() == "" {
		t.Errorf("votes = %+v, progress %q", out.Votes, out.Progress())
	}
	if n := b.count(t, "SELECT count(*) FROM executions WHERE request_id = $1", out.Edit.ID); n != 0 {
		t.Errorf("an edit waiting for approvals has %d executions", n)
	}
	second, err := b.svc.Decide(b.ctx, approve(out.Edit, approverB))
	if err != nil || !second.Created {
		t.Fatalf("the second approval = %+v, %v", second, err)
	}

	// Back down into the small tier: still two approvals.
	big := b.submit(t, &intentOpts{RunID: ptr("r-big"), Effect: ptr(`{"invoice":"inv_1","amount_cents":50000,"currency":"USD"}`)})
	down, err := b.svc.ApproveWithEdit(b.ctx, editOf(big, approverA, `{"invoice":"inv_1","amount_cents":500,"currency":"USD"}`))
	if err != nil {
		t.Fatalf("ApproveWithEdit: %v", err)
	}
	if down.Approved || down.Edit.Policy.Needed() != 2 {
		t.Errorf("an edit into a smaller tier: approved %v, needs %d; want 2 (never fewer)", down.Approved, down.Edit.Policy.Needed())
	}
}

// Refused edits store nothing and answer with stable codes: a reviewer who
// is no approver, an edit of a decided request, an edit that fails the
// tool's schema or is not strict JSON, and an edit that changes nothing.
func TestApproveWithEditRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.withSchema(t)
	orig := b.submit(t, nil)
	decided := b.submit(t, &intentOpts{RunID: ptr("r-decided")})
	if _, err := b.svc.Decide(b.ctx, approve(decided, approverA)); err != nil {
		t.Fatal(err)
	}
	requestsBefore := b.count(t, "SELECT count(*) FROM requests")
	stale := editOf(orig, approverA, `{"invoice":"inv_8841","amount_cents":1,"currency":"USD"}`)
	stale.PayloadHash = "sha256:other"
	cases := []struct {
		name string
		edit Edit
		code string
	}{
		{"outsider", editOf(orig, outsider, `{"invoice":"inv_8841","amount_cents":1,"currency":"USD"}`), CodeNotApprover},
		{"the person it is for", editOf(orig, requester, `{"invoice":"inv_8841","amount_cents":1,"currency":"USD"}`), CodeSelfApproval},
		{"decided", editOf(decided, approverB, `{"invoice":"inv_8841","amount_cents":1,"currency":"USD"}`), CodeAlreadyDecided},
		{"stale", stale, CodeStaleCard},
		{"schema", editOf(orig, approverA, `{"invoice":"inv_8841","amount_cents":-5,"currency":"USD"}`), CodeInvalidEffect},
		{"unknown field", editOf(orig, approverA, `{"invoice":"inv_8841","amount_cents":1,"currency":"USD","x":1}`), CodeInvalidEffect},
		{"duplicate member", editOf(orig, approverA, `{"invoice":"inv_8841","invoice":"inv_1","amount_cents":1,"currency":"USD"}`), CodeInvalidRequest},
		{"not an object", editOf(orig, approverA, `[1]`), CodeInvalidRequest},
		{"unchanged", editOf(orig, approverA, `{"currency":"USD","invoice":"inv_8841","amount_cents":4200}`), CodeInvalidRequest},
	}
	for _, c := range cases {
		_, err := b.svc.ApproveWithEdit(b.ctx, c.edit)
		if err == nil {
			t.Errorf("%s: the edit was accepted", c.name)
			continue
		}
		if got := RefusalFor(err).Code; got != c.code {
			t.Errorf("%s: code %s (%v), want %s", c.name, got, err, c.code)
		}
	}
	if n := b.count(t, "SELECT count(*) FROM requests"); n != requestsBefore {
		t.Errorf("refused edits stored %d requests", n-requestsBefore)
	}
	got, err := b.store.RequestByID(b.ctx, orig.ID)
	if err != nil || got.Status != store.RequestPending || got.SupersededBy != "" {
		t.Errorf("the original after refused edits = %s %q, %v", got.Status, got.SupersededBy, err)
	}
	if n := b.count(t, "SELECT count(*) FROM events WHERE kind = 'decision_refused' AND request_id = $1 AND data->>'edit' = 'true'", orig.ID); n != 2 {
		t.Errorf("%d refused edits audited, want 2 (the outsider, the person it is for)", n)
	}
}

// An edit racing approvals of the same request: one wins, and the loser is
// told already_decided.
func TestApproveWithEditRacingAnApproval(t *testing.T) {
	t.Parallel()
	b := setup(t)
	orig := b.submit(t, nil)
	var editErr, approveErr error
	var approved Outcome
	together(2, func(i int) {
		if i == 0 {
			_, editErr = b.svc.ApproveWithEdit(b.ctx, editOf(orig, approverA, `{"invoice":"inv_8841","amount_cents":4300,"currency":"USD"}`))
			return
		}
		approved, approveErr = b.svc.Decide(b.ctx, approve(orig, approverB))
		if approveErr == nil {
			approveErr = approved.Err()
		}
	})
	if (editErr == nil) == (approveErr == nil) {
		t.Fatalf("edit %v, approval %v: want exactly one to win", editErr, approveErr)
	}
	loser := editErr
	if loser == nil {
		loser = approveErr
	}
	if code := RefusalFor(loser).Code; code != CodeAlreadyDecided {
		t.Errorf("the loser's code = %s (%v), want already_decided", code, loser)
	}
	if editErr == nil {
		if n := b.count(t, "SELECT count(*) FROM executions WHERE request_id = $1", orig.ID); n != 0 {
			t.Errorf("the edit won, and the original has %d executions", n)
		}
	}
}

package approvals

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestDecideConcurrentApprovalsGiveOneDecisionAndOneExecution(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		// 32 distinct authorized reviewers.
		tool := b.svc.Tools["billing.credit"]
		for i := range 32 {
			tool.Approvers = append(tool.Approvers, fmt.Sprintf("U0REVIEWER%02d", i))
		}
		b.svc.Tools["billing.credit"] = tool
		req := b.submit(t, nil)

		outs := make([]Outcome, 32)
		errs := make([]error, 32)
		together(32, func(i int) {
			outs[i], errs[i] = b.svc.Decide(b.ctx, approve(req, fmt.Sprintf("U0REVIEWER%02d", i)))
		})
		created := 0
		for i := range 32 {
			if errs[i] != nil {
				t.Fatalf("decide %d: %v", i, errs[i])
			}
			if outs[i].Created {
				created++
			}
			if outs[i].Decision.ID != outs[0].Decision.ID || outs[i].Decision.DecidedBy != outs[0].Decision.DecidedBy {
				t.Errorf("decide %d saw decision %d by %s, decide 0 saw %d by %s", i,
					outs[i].Decision.ID, outs[i].Decision.DecidedBy, outs[0].Decision.ID, outs[0].Decision.DecidedBy)
			}
		}
		if created != 1 {
			t.Errorf("%d calls report Created, want 1", created)
		}
		for table, want := range map[string]int{
			`SELECT count(*) FROM decisions`:                         1,
			`SELECT count(*) FROM executions`:                        1,
			`SELECT count(*) FROM events WHERE kind = 'decided'`:     1,
			`SELECT count(*) FROM outbox WHERE kind = 'update_card'`: 1,
		} {
			if got := b.count(t, table); got != want {
				t.Errorf("%s = %d, want %d", table, got, want)
			}
		}
	})
}

func TestApproveCreatesExecutionFromStoredKeyAndSnapshot(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		out, err := b.svc.Decide(b.ctx, approve(req, approverA))
		if err != nil || !out.Created {
			t.Fatalf("Decide = %v, created %v", err, out.Created)
		}
		exec, err := b.store.LatestExecution(b.ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if exec.Key != req.Key || string(exec.Snapshot) != string(req.Snapshot) || exec.SnapshotHash != req.PayloadHash {
			t.Errorf("execution %+v does not copy the request's key and snapshot", exec)
		}
		if exec.State != store.ExecReady || exec.Attempts != 0 || exec.MaxAttempts != 3 || exec.DecisionID != out.Decision.ID {
			t.Errorf("execution = %+v", exec)
		}
		if out.Request.Status != store.RequestApproved || out.Decision.PayloadHashSeen != req.PayloadHash {
			t.Errorf("outcome = %+v", out)
		}

		// A later reject, a double click, another reviewer: all see the approval.
		for _, d := range []Decision{approve(req, approverA), approve(req, approverB), func() Decision {
			d := approve(req, approverB)
			d.Verdict = store.VerdictReject
			return d
		}()} {
			again, err := b.svc.Decide(b.ctx, d)
			if err != nil || again.Created || again.Decision.ID != out.Decision.ID || again.Decision.Verdict != store.VerdictApprove {
				t.Errorf("repeat %+v = %+v, %v", d, again, err)
			}
		}
		if got := b.count(t, `SELECT count(*) FROM executions`); got != 1 {
			t.Errorf("executions = %d, want 1", got)
		}
	})
}

func TestRejectCreatesNoExecution(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		d := approve(req, approverA)
		d.Verdict = store.VerdictReject
		out, err := b.svc.Decide(b.ctx, d)
		if err != nil || !out.Created || out.Request.Status != store.RequestRejected {
			t.Fatalf("reject = %+v, %v", out, err)
		}
		if got := b.count(t, `SELECT count(*) FROM executions`); got != 0 {
			t.Errorf("executions = %d, want 0", got)
		}
	})
}

func TestDecideRefusals(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)

		tests := []struct {
			name    string
			mutate  func(*Decision)
			want    error
			audited bool
		}{
			{"not an approver", func(d *Decision) { d.DecidedBy = outsider }, ErrNotAllowed, true},
			{"self-approval", func(d *Decision) { d.DecidedBy = requester }, ErrSelfApproval, true},
			{"stale round", func(d *Decision) { d.Round = 2 }, ErrStaleCard, false},
			{"payload hash changed", func(d *Decision) { d.PayloadHash = "sha256:00" }, ErrStaleCard, false},
			{"unknown request", func(d *Decision) { d.RequestID = "00000000-0000-0000-0000-000000000000" }, ErrNotFound, false},
		}
		for _, tt := range tests {
			d := approve(req, approverA)
			tt.mutate(&d)
			before := b.count(t, `SELECT count(*) FROM events WHERE kind = 'decision_refused'`)
			if _, err := b.svc.Decide(b.ctx, d); !errors.Is(err, tt.want) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			}
			after := b.count(t, `SELECT count(*) FROM events WHERE kind = 'decision_refused'`)
			if (after > before) != tt.audited {
				t.Errorf("%s: audited = %v, want %v", tt.name, after > before, tt.audited)
			}
		}
		if got := b.count(t, `SELECT count(*) FROM decisions`); got != 0 {
			t.Errorf("decisions = %d after refusals, want 0", got)
		}

		// The requester may still reject a request made for them, and a group
		// member may decide.
		groupMember := approve(req, "U0GROUPMEMBER")
		if out, err := b.svc.Decide(b.ctx, groupMember); err != nil || !out.Created {
			t.Errorf("group member approve = %+v, %v", out, err)
		}
	})
}

func TestDecideAfterExpiryIsNotPending(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		now := time.Now()
		b.svc.Now = func() time.Time { return now }
		req := b.submit(t, nil)
		b.svc.Now = func() time.Time { return now.Add(2 * time.Hour) }

		// Past expiry but before the sweep: still refused, reported as expired.
		var notPending *NotPendingError
		if _, err := b.svc.Decide(b.ctx, approve(req, approverA)); !errors.As(err, &notPending) || notPending.Status != store.RequestExpired {
			t.Fatalf("approve past expiry = %v, want expired", err)
		}
		if n, err := b.svc.ExpireOnce(b.ctx); err != nil || n != 1 {
			t.Fatalf("ExpireOnce = %d, %v", n, err)
		}
		if n, err := b.svc.ExpireOnce(b.ctx); err != nil || n != 0 {
			t.Fatalf("second ExpireOnce = %d, %v; want 0", n, err)
		}
		got, err := b.svc.Get(b.ctx, billingAgent, req.Key)
		if err != nil || got.Status != store.RequestExpired {
			t.Fatalf("after expiry: %s, %v", got.Status, err)
		}
		if _, err := b.store.LatestDecision(b.ctx, req.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("an expiry must not be recorded as a decision: %v", err)
		}
		if c := b.count(t, `SELECT count(*) FROM events WHERE request_id = $1 AND kind = 'expired'`, req.ID); c != 1 {
			t.Errorf("expired events = %d, want 1", c)
		}
		if c := b.count(t, `SELECT count(*) FROM outbox WHERE request_id = $1 AND kind = 'update_card'`, req.ID); c != 1 {
			t.Errorf("update_card rows = %d, want 1", c)
		}
	})
}

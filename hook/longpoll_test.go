package hook

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// A long-poll on a settled request answers at once, whatever the wait.
func TestHookLongPollOnSettledAnswersAtOnce(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := b.post(t, vectorBody).view(t)
		if v.Settled || v.Version != 1 {
			t.Fatalf("new request settled %v version %d, want false and 1", v.Settled, v.Version)
		}
		if r := b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/cancel", testToken, nil, nil); r.status != 200 {
			t.Fatalf("cancel = %d %s", r.status, r.body)
		}
		for _, query := range []string{"?wait=20s", "?wait=20s&since=0", "?wait=20s&since=99"} {
			start := time.Now()
			r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key+query, testToken, nil, nil)
			took := time.Since(start)
			t.Logf("GET %s on a settled request answered in %s", query, took)
			got := r.view(t)
			if r.status != 200 || !got.Settled || got.Status != wire.StatusCancelled || got.Version != 2 {
				t.Errorf("GET %s = %d %s", query, r.status, r.body)
			}
			if took > 100*time.Millisecond {
				t.Errorf("GET %s on a settled request took %s, want under 100ms", query, took)
			}
		}

		// The case: a request whose write had already succeeded.
		other := b.submit(t, &approvalstest.IntentOpts{RunID: new("r-succeeded")})
		if _, err := b.svc.Decide(b.ctx, approve(other, approverA)); err != nil {
			t.Fatal(err)
		}
		claims, err := b.store.ClaimExecutions(b.ctx, store.ClaimParams{Worker: "w", Limit: 1,
			ClaimTimeouts: map[string]time.Duration{"billing.credit": time.Minute}})
		if err != nil || len(claims) != 1 {
			t.Fatalf("claim = %d, %v", len(claims), err)
		}
		if _, err := b.store.TransitionExecutions(b.ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: store.ExecutorActor("w")},
			[]store.Transition{{ExecutionID: claims[0].ID, Attempt: claims[0].Attempts, To: store.ExecSucceeded, Status: 200,
				Body: []byte(`{"id":"cr_1"}`)}}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		r := b.do(t, http.MethodGet, "/v1/requests/"+other.Key+"?wait=20s", testToken, nil, nil)
		took := time.Since(start)
		if got := r.view(t); r.status != 200 || !got.Settled || got.Execution == nil || got.Execution.State != wire.ExecSucceeded {
			t.Errorf("GET ?wait=20s on a succeeded request = %d %s", r.status, r.body)
		}
		if took > 100*time.Millisecond {
			t.Errorf("GET ?wait=20s on a succeeded request took %s, want under 100ms", took)
		}
	})
}

// since answers at once when the version moved past it, and otherwise waits
// for the next change.
func TestHookLongPollSince(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := b.post(t, vectorBody).view(t)

		start := time.Now()
		r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=20s&since=0", testToken, nil, nil)
		if got := r.view(t); r.status != 200 || got.Version != 1 || time.Since(start) > 100*time.Millisecond {
			t.Errorf("since=0 on version 1 = %d %s after %s; want at once", r.status, r.body, time.Since(start))
		}

		start = time.Now()
		r = b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=1s&since=1", testToken, nil, nil)
		if got := r.view(t); r.status != 200 || got.Version != 1 || time.Since(start) < time.Second {
			t.Errorf("since=1 on unchanged version 1 = %d %s after %s; want at the deadline", r.status, r.body, time.Since(start))
		}

		done := make(chan response, 1)
		go func() {
			done <- b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=30s&since=1", testToken, nil, nil)
		}()
		deadline := time.Now().Add(10 * time.Second)
		for !b.hasWaiter(v.ID) {
			if time.Now().After(deadline) {
				t.Fatal("the long-poll never subscribed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		req, err := b.svc.Get(b.ctx, billingAgent, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		decidedAt := time.Now()
		if _, err := b.svc.Decide(b.ctx, approve(req, approverA)); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			got := r.view(t)
			if r.status != 200 || got.Version <= 1 || got.Status != wire.StatusApproved || got.Settled {
				t.Errorf("since=1 after approval = %d %s", r.status, r.body)
			}
			if waited := time.Since(decidedAt); waited > 2*time.Second {
				t.Errorf("the long-poll answered %s after the change", waited)
			}
			// The version it answered with is a new baseline: nothing moved since.
			start = time.Now()
			r = b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=1s&since="+strconv.FormatInt(got.Version, 10), testToken, nil, nil)
			if again := r.view(t); again.Version != got.Version || time.Since(start) < time.Second {
				t.Errorf("since=%d = %s after %s; want the same version at the deadline", got.Version, r.body, time.Since(start))
			}
		case <-time.After(20 * time.Second):
			t.Fatal("long-poll did not return after the decision")
		}

		for _, bad := range []string{"-1", "x", "1.5"} {
			r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=1s&since="+bad, testToken, nil, nil)
			if code, field := r.errorCode(t); r.status != 422 || code != approvals.CodeInvalidRequest || field != "since" {
				t.Errorf("since=%s = %d %s", bad, r.status, r.body)
			}
		}
	})
}

// A long-poll re-reads only when woken, never on a timer. A change whose
// notification was lost, sent while the listener's connection was down, is
// still seen: once the listener listens again it wakes every waiter to
// re-read.
func TestHookLongPollRereadsAfterTheListenerReconnects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := b.post(t, vectorBody).view(t)
	done := make(chan response, 1)
	go func() {
		done <- b.do(t, http.MethodGet, "/v1/requests/"+v.ID+"?wait=30s&since=1", testToken, nil, nil)
	}()
	var listener int
	for deadline := time.Now().Add(10 * time.Second); !b.hasWaiter(v.ID) || listener == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no waiter (%v) or no listening backend (%d)", b.hasWaiter(v.ID), listener)
		}
		// The listener's connection is the one backend of this database
		// whose last statement was a LISTEN.
		listener, _ = b.queryInt(`SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN %'`)
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.exec(`SELECT pg_terminate_backend($1)`, listener); err != nil {
		t.Fatal(err)
	}
	// The change commits without a notification, as one sent while the
	// listener is away would reach nobody; the listener waits a second
	// before it connects again.
	if err := b.exec(`UPDATE requests SET version = version + 1 WHERE id = $1`, v.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case r := <-done:
		if got := r.view(t); r.status != 200 || got.Version != 2 {
			t.Errorf("long-poll after the listener came back = %d %s; want version 2", r.status, r.body)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the long-poll answered %s after the change; the listener reconnects within seconds", took)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the long-poll did not re-read after the listener reconnected")
	}
}

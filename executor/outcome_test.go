package executor_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// TestClassificationTableAtTheProvider drives every row of the table through
// a real send to the fake provider and checks the state, the code, the audit
// event and the objects created.
func TestClassificationTableAtTheProvider(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.Timeout = 400 * time.Millisecond }})
		rows := []struct {
			name     string
			behavior providertest.Behavior
			state    store.ExecState
			code     string
			event    string
			objects  int
			// after a reconcile pass (verify URL: 200 done, 404 not done)
			reconciled store.ExecState
		}{
			{"2xx", providertest.Behavior{}, store.ExecSucceeded, "", "succeeded", 1, store.ExecSucceeded},
			{"rate_limited", providertest.Behavior{Status: 400, Code: "rate_limited"}, store.ExecReady, "rate_limited", "attempt", 0, store.ExecReady},
			{"timeout code", providertest.Behavior{Status: 500, Code: "timeout", CodeAtTop: true}, store.ExecReady, "timeout", "attempt", 0, store.ExecReady},
			{"service_unavailable", providertest.Behavior{Status: 503, Code: "service_unavailable"}, store.ExecReady, "service_unavailable", "attempt", 0, store.ExecReady},
			{"connection_reset code", providertest.Behavior{Status: 502, Code: "connection_reset"}, store.ExecReady, "connection_reset", "attempt", 0, store.ExecReady},
			{"408", providertest.Behavior{Status: 408}, store.ExecReady, "http_408", "attempt", 0, store.ExecReady},
			{"425", providertest.Behavior{Status: 425}, store.ExecReady, "http_425", "attempt", 0, store.ExecReady},
			{"429", providertest.Behavior{Status: 429}, store.ExecReady, "http_429", "attempt", 0, store.ExecReady},
			{"500", providertest.Behavior{Status: 500}, store.ExecReady, "http_500", "attempt", 0, store.ExecReady},
			{"502", providertest.Behavior{Status: 502}, store.ExecReady, "http_502", "attempt", 0, store.ExecReady},
			{"503", providertest.Behavior{Status: 503}, store.ExecReady, "http_503", "attempt", 0, store.ExecReady},
			{"unknown_outcome", providertest.Behavior{Status: 500, Code: "unknown_outcome"}, store.ExecUnknown, "unknown_outcome", "unknown", 0, store.ExecReady},
			{"gateway_timeout", providertest.Behavior{Status: 502, Code: "gateway_timeout"}, store.ExecUnknown, "gateway_timeout", "unknown", 0, store.ExecReady},
			{"504", providertest.Behavior{Status: 504}, store.ExecUnknown, "http_504", "unknown", 0, store.ExecReady},
			{"timeout after written", providertest.Behavior{Hang: true}, store.ExecUnknown, "send_timeout", "unknown", 0, store.ExecReady},
			{"processed then dropped", providertest.Behavior{DropAfterProcess: true}, store.ExecUnknown, "connection_lost", "unknown", 1, store.ExecSucceeded},
			{"processed then timed out", providertest.Behavior{HangAfterProcess: true}, store.ExecUnknown, "send_timeout", "unknown", 1, store.ExecSucceeded},
			{"card_declined", providertest.Behavior{Status: 402, Code: "card_declined"}, store.ExecFailed, "card_declined", "failed", 0, store.ExecFailed},
			{"insufficient_funds", providertest.Behavior{Status: 402, Code: "insufficient_funds"}, store.ExecFailed, "insufficient_funds", "failed", 0, store.ExecFailed},
			{"policy_violation wins over 200", providertest.Behavior{Status: 200, Code: "policy_violation", CodeAtTop: true}, store.ExecFailed, "policy_violation", "failed", 0, store.ExecFailed},
			{"invalid_request wins over 503", providertest.Behavior{Status: 503, Code: "invalid_request"}, store.ExecFailed, "invalid_request", "failed", 0, store.ExecFailed},
			{"other 4xx", providertest.Behavior{Status: 409}, store.ExecFailed, "http_409", "failed", 0, store.ExecFailed},
			{"3xx", providertest.Behavior{Status: 302}, store.ExecNeedsReview, "http_302", "needs_review", 0, store.ExecNeedsReview},
			{"501", providertest.Behavior{Status: 501}, store.ExecNeedsReview, "http_501", "needs_review", 0, store.ExecNeedsReview},
		}
		reqs := make([]store.Request, len(rows))
		for i, row := range rows {
			reqs[i] = b.approve(t)
			b.provider.SetFor(reqs[i].Key, row.behavior)
		}
		if n := b.dispatch(t); n != len(rows) {
			t.Fatalf("claimed %d, want %d", n, len(rows))
		}
		for i, row := range rows {
			e := b.execution(t, reqs[i].ID)
			if e.State != row.state || e.Attempts != 1 || deref(e.LastCode) != row.code {
				t.Errorf("%s: state %s attempts %d code %q, want %s 1 %q", row.name, e.State, e.Attempts, deref(e.LastCode), row.state, row.code)
			}
			if kinds := eventKinds(t, b.db, reqs[i].ID); kinds[len(kinds)-1] != row.event {
				t.Errorf("%s: last event %v, want %s", row.name, kinds, row.event)
			}
			if got := b.provider.ObjectsFor(reqs[i].Key); got != row.objects {
				t.Errorf("%s: %d objects, want %d", row.name, got, row.objects)
			}
			out := outboxRows(t, b.db, reqs[i].ID)
			wantReply := map[store.ExecState]string{store.ExecFailed: "thread_reply/1/failed", store.ExecNeedsReview: "thread_reply/1/needs_review"}[row.state]
			if wantReply != "" && !slices.Contains(out, wantReply) {
				t.Errorf("%s: outbox %v lacks %s", row.name, out, wantReply)
			}
		}
		// Stop answering with failures, then settle the unknowns.
		b.provider.Release()
		b.reconcile(t)
		for i, row := range rows {
			if e := b.execution(t, reqs[i].ID); e.State != row.reconciled {
				t.Errorf("%s: after reconcile %s, want %s", row.name, e.State, row.reconciled)
			}
			if got := b.provider.ObjectsFor(reqs[i].Key); got != row.objects {
				t.Errorf("%s: after reconcile %d objects, want %d", row.name, got, row.objects)
			}
		}
	})
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + ln.Addr().String() + "/credits"
		ln.Close()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.URL = closed }})
		req := b.approve(t)
		b.dispatch(t)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecReady)
		if deref(e.LastCode) != executor.CodeConnectionRefused {
			t.Fatalf("code %q", deref(e.LastCode))
		}
	})
}

func TestAttemptsAreCappedOnTheRow(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d}) // max_attempts 3, no backoff
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{Status: 503})
		for range 5 {
			b.dispatch(t)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecFailed)
		if e.Attempts != 3 || b.provider.Writes(req.Key) != 3 {
			t.Fatalf("attempts %d, provider saw %d writes; want 3 and 3", e.Attempts, b.provider.Writes(req.Key))
		}
		if deref(e.LastCode) != "http_503" || deref(e.LastError) == "" {
			t.Fatalf("failure recorded as %q: %q", deref(e.LastCode), deref(e.LastError))
		}
		if got := outboxRows(t, b.db, req.ID); !slices.Contains(got, "thread_reply/1/failed") {
			t.Fatalf("outbox %v", got)
		}
		wantObjects(t, b.provider, req.Key, 0)
	})
}

func TestRetryThenSucceedUnderTheSameKey(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{Status: 429, Times: 2})
		for range 3 {
			b.dispatch(t)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		if e.Attempts != 3 {
			t.Fatalf("attempts %d", e.Attempts)
		}
		wantObjects(t, b.provider, req.Key, 1)
		if got := eventKinds(t, b.db, req.ID); !slices.Equal(got, []string{"requested", "voted", "decided", "claimed", "attempt", "claimed", "attempt", "claimed", "succeeded"}) {
			t.Fatalf("events %v", got)
		}
	})
}

func TestRetryAfterIsHonoured(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d}) // the backoff is 0, so the delay is the provider's
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{Status: 429, RetryAfter: "120"})
		b.dispatch(t)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecReady)
		if wait := e.NextAttemptAt.Sub(e.UpdatedAt); wait < 119*time.Second || wait > 121*time.Second {
			t.Fatalf("next attempt in %s, want 120s", wait)
		}
		if n := b.dispatch(t); n != 0 {
			t.Fatal("claimed before Retry-After passed")
		}
	})
}

func TestDefaultBackoffGrowsWithJitter(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 30: 5 * time.Minute} {
		for range 50 {
			d := executor.DefaultBackoff(attempt)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: backoff %s outside [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

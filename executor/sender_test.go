package executor_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// memProvider is a provider in memory behind the sender port: it keeps
// the writes it was sent and answers with what the test scripts.
type memProvider struct {
	mu      sync.Mutex
	writes  []sender.Write
	held    map[string]bool // keys whose write it has
	answer  sender.Outcome  // what the next send answers; "" is success
	refuse  error           // the precondition's answer
	checked int
}

func (m *memProvider) Send(_ context.Context, w sender.Write) sender.Attempt {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes = append(m.writes, w)
	m.held[w.Key] = true
	switch m.answer {
	case "":
		return sender.Attempt{Outcome: sender.OutcomeSucceeded, ProviderRef: "mem_" + w.Key, Status: 1}
	case sender.OutcomeVerify:
		return sender.Attempt{Outcome: sender.OutcomeVerify, Code: "mem_lost", Message: "the answer was lost"}
	}
	return sender.Attempt{Outcome: m.answer, Code: "mem_" + string(m.answer)}
}

func (m *memProvider) Outcome(string) (sender.Outcome, bool) {
	return "", false
}

func (m *memProvider) Verify(_ context.Context, w sender.Write) (sender.Verification, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[w.Key] {
		return sender.Verification{Found: true, ProviderRef: "mem_" + w.Key}, nil
	}
	return sender.Verification{}, nil
}

func (m *memProvider) Check(context.Context, sender.Write) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checked++
	return m.refuse
}

func (m *memProvider) sent() []sender.Write {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sender.Write(nil), m.writes...)
}

// noHTTP fails every HTTP call: a tool with a sender of its own must make
// none.
type noHTTP struct{ t *testing.T }

func (n noHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("an HTTP call to %s was made for a tool with a sender of its own", r.URL.Host)
	return nil, errors.New("no HTTP here")
}

// A tool whose provider is not HTTP is sent, verified and checked through
// the sender port alone, under the same rules: the claim before the send,
// the exact approved bytes under the stored key, an ambiguous outcome
// verified rather than resent, a refused precondition superseding the
// approval.
func TestSenderPortCarriesEveryRule(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		mem := &memProvider{held: map[string]bool{}}
		b := setup(t, &options{driver: d,
			tool: func(tool *executor.Tool) {
				*tool = executor.Tool{Sender: mem, Verifier: mem, Checker: mem,
					Timeout: tool.Timeout, MaxAttempts: tool.MaxAttempts, ClaimTimeout: tool.ClaimTimeout,
					ApprovalTTL: tool.ApprovalTTL, VerifyAfter: tool.VerifyAfter}
			},
			config: func(cfg *executor.Config) { cfg.HTTPClient = &http.Client{Transport: noHTTP{t}} },
		})

		// Sent once, exactly as approved, and settled with the provider's ref.
		req := b.approve(t)
		if n := b.dispatch(t); n != 1 {
			t.Fatalf("claimed %d", n)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		writes := mem.sent()
		if len(writes) != 1 || writes[0].Key != req.Key || writes[0].RequestID != req.ID || string(writes[0].Body) != string(e.Snapshot) || writes[0].Tool != toolName {
			t.Fatalf("the sender was given %+v for key %s", writes, req.Key)
		}
		if e.ProviderRef == nil || *e.ProviderRef != "mem_"+req.Key || e.Attempts != 1 {
			t.Fatalf("provider ref %v after %d attempts", e.ProviderRef, e.Attempts)
		}

		// An ambiguous answer is verified through the port, never resent.
		mem.answer = sender.OutcomeVerify
		req = b.approve(t)
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecUnknown)
		if code := deref(b.execution(t, req.ID).LastCode); code != "mem_lost" {
			t.Fatalf("last code %q", code)
		}
		b.reconcileDue(t, 1)
		e = b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		if len(mem.sent()) != 2 || e.ProviderRef == nil || *e.ProviderRef != "mem_"+req.Key {
			t.Fatalf("%d sends, provider ref %v", len(mem.sent()), e.ProviderRef)
		}

		// A refused precondition sends nothing and asks for a new decision.
		mem.refuse = errors.New("the invoice is closed")
		req = b.approve(t)
		b.dispatch(t)
		e = b.execution(t, req.ID)
		wantState(t, e, store.ExecSuperseded)
		if deref(e.LastCode) != executor.CodePrecondition || deref(e.LastError) != "the invoice is closed" || len(mem.sent()) != 2 {
			t.Fatalf("code %q, error %q, %d sends", deref(e.LastCode), deref(e.LastError), len(mem.sent()))
		}
	})
}

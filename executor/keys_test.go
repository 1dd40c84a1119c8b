package executor_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// awkwardKeys are valid client keys that change when escaped for the wrong
// part of a URL: a slash splits a path, a plus read from a query is a space,
// and = : ~ mean something in one part or another. (Spaces and percent
// signs are no longer valid in a client key.)
var awkwardKeys = []string{"inv/42/credit", "inv+44+credit", "inv=45=credit", "inv:46~credit", "inv/47+credit=="}

// verifyForms are the two places a verify URL can carry the key.
var verifyForms = []struct{ name, path string }{
	{"path", "/objects/{key}"},
	{"query", "/objects?key={key}"},
}

// TestUncertainSendsUnderAwkwardKeys times out sends the provider has
// already performed, under client keys with a slash, a plus, an equals sign,
// a colon and a tilde, at a provider that ignores keys: the verify URL must ask for exactly
// that key, find the write, and nothing is sent twice.
func TestUncertainSendsUnderAwkwardKeys(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		for _, form := range verifyForms {
			t.Run(form.name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) {
					tool.KeyAware = false
					tool.Timeout = 300 * time.Millisecond
					tool.Verify = &executor.Endpoint{URL: strings.TrimSuffix(tool.URL, "/credits") + form.path}
				}})
				b.provider.IgnoreKeys(true)
				b.provider.Set(providertest.Behavior{HangAfterProcess: true})
				reqs := make([]store.Request, len(awkwardKeys))
				for i, key := range awkwardKeys {
					if err := approvals.CheckClientKeyForm(key); err != nil {
						t.Fatalf("%q is not a valid client key: %v", key, err)
					}
					reqs[i] = approveKey(t, b.review, fmt.Sprintf("run-awkward-%d", i), key)
				}
				if n := b.dispatch(t); n != len(reqs) {
					t.Fatalf("claimed %d, want %d", n, len(reqs))
				}
				for _, req := range reqs {
					wantState(t, b.execution(t, req.ID), store.ExecUnknown)
				}

				b.provider.Set(providertest.Behavior{})
				b.reconcileDue(t, len(reqs))
				b.dispatch(t) // anything the verify wrongly sent back to ready goes out again here
				wantVerifiedOnce(t, b.provider, reqs, func(id string) store.Execution { return b.execution(t, id) })
			})
		}
	})
}

// wantVerifiedOnce checks that each request's key reached the provider once
// and that its execution succeeded with the response of its own object, not
// another key's.
func wantVerifiedOnce(t *testing.T, p *providertest.Provider, reqs []store.Request, execution func(requestID string) store.Execution) {
	t.Helper()
	objectOf := map[string]string{}
	for _, o := range p.AllObjects() {
		objectOf[o.Key] = o.ID
	}
	for _, req := range reqs {
		if got := p.Writes(req.Key); got != 1 {
			t.Errorf("key %q: the provider received %d writes, want 1", req.Key, got)
		}
		e := execution(req.ID)
		if e.State != store.ExecSucceeded {
			t.Errorf("key %q: execution is %s (code %q), want succeeded", req.Key, e.State, deref(e.LastCode))
		} else if deref(e.ProviderRef) != objectOf[req.Key] {
			t.Errorf("key %q: verified with the response of %s, want its own object %s", req.Key, deref(e.ProviderRef), objectOf[req.Key])
		}
	}
	if got := p.Received(); got != len(reqs) {
		t.Errorf("the provider received %d writes, want %d", got, len(reqs))
	}
}

package mcpserver_test

import (
	"testing"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/mcpserver"
)

// The sentence a model reads says where the request stands, by its key.
func TestSentence(t *testing.T) {
	t.Parallel()
	approved := func(e *client.Execution) *client.Request {
		return &client.Request{Key: "wa_1", Status: client.StatusApproved, Decision: &client.Decision{By: "U0ANA", Verdict: "approve"}, Execution: e}
	}
	for _, c := range []struct {
		req  *client.Request
		want string
	}{
		{&client.Request{Key: "wa_1", Status: client.StatusPending, Policy: client.RequestPolicy{Approvals: 2},
			Votes: []client.Vote{{By: "U0ANA", Verdict: "approve"}}}, "request wa_1: pending review, 1 of 2 approvals"},
		{&client.Request{Key: "wa_1", Status: client.StatusPending, Replayed: true},
			"request wa_1: pending review, 0 of 1 approvals (this write was already requested: the same request, nothing new stored)"},
		{approved(&client.Execution{State: client.ExecSucceeded, ProviderRef: "obj_1"}), "request wa_1: approved by U0ANA, executed: obj_1"},
		{approved(&client.Execution{State: client.ExecClaimed, Attempts: 2}), "request wa_1: approved by U0ANA, executing (attempt 2)"},
		{approved(&client.Execution{State: client.ExecFailed, Code: "provider_4xx"}), "request wa_1: approved by U0ANA, but the write failed (provider_4xx)"},
		{approved(&client.Execution{State: client.ExecUnknown}), "request wa_1: approved by U0ANA; whether the write happened is not known yet and is being verified"},
		{approved(&client.Execution{State: client.ExecNeedsReview}), "request wa_1: approved by U0ANA; the write needs a person's review before it can finish"},
		{&client.Request{Key: "wa_1", Status: client.StatusRejected, Decision: &client.Decision{By: "U0BO", Reason: "wrong invoice"}},
			"request wa_1: rejected by U0BO: wrong invoice; nothing was written. Requesting the same write again (same run_id, step, tool and effect) " +
				"returns this rejection and asks nobody; to ask again, change what was refused and request it with a new step"},
		{&client.Request{Key: "wa_1", Status: client.StatusApproved, Decision: &client.Decision{By: "policy:small", Via: client.ViaPolicy, Verdict: "approve"},
			Execution: &client.Execution{State: client.ExecReady}}, `request wa_1: approved by policy rule "small" (no review needed), executing (attempt 1)`},
		{&client.Request{Key: "wa_1", Status: client.StatusApproved, Decision: &client.Decision{By: "grant:g_7", Via: client.ViaGrant, Verdict: "approve"},
			Execution: &client.Execution{State: client.ExecSucceeded}}, "request wa_1: approved by a reviewer's standing grant g_7 (no review needed), executed"},
		{&client.Request{Key: "wa_1", Status: client.StatusRejected, Decision: &client.Decision{By: "policy:frozen", Via: client.ViaPolicy, Reason: "Frozen."}},
			`request wa_1: denied by policy rule "frozen": Frozen; nothing was written, and the same write would be denied again`},
		// Only a decision made by the policy reads as one: a person's id
		// that looks like a rule is a person's.
		{&client.Request{Key: "wa_1", Status: client.StatusRejected, Decision: &client.Decision{By: "policy:frozen", Via: "slack"}},
			"request wa_1: rejected by policy:frozen; nothing was written. Requesting the same write again (same run_id, step, tool and effect) " +
				"returns this rejection and asks nobody; to ask again, change what was refused and request it with a new step"},
		{&client.Request{Key: "wa_1", Status: client.StatusExpired}, "request wa_1: expired before anyone decided; nothing was written"},
		{&client.Request{Key: "wa_1", Status: client.StatusCancelled}, "request wa_1: cancelled; nothing was written"},
	} {
		if got := mcpserver.Sentence(c.req); got != c.want {
			t.Errorf("Sentence = %q\nwant       %q", got, c.want)
		}
	}
}

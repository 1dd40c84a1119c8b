package hook

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
)

// grantBody is a billing.grant intent for invoice inv_<n> and amount.
func grantBody(step, n, amount int) string {
	return fmt.Sprintf(`{"run_id":"r-grant","step":%d,"tool":"billing.grant","effect":{"invoice":"inv_%d","amount_cents":%d}}`, step, n, amount)
}

// grant configures billing.grant (grants matching the invoice, capped at
// the amount) unless it is, has approverA approve a billing.grant intent
// for inv_<n> and allow similar writes for an hour, and returns the grant.
func (b *bundle) grant(t *testing.T, n int) store.Grant {
	t.Helper()
	if _, ok := b.svc.Tools["billing.grant"]; !ok {
		tools := maps.Clone(b.svc.Tools)
		tools["billing.grant"] = approvals.Tool{Name: "billing.grant", Approvers: []string{approverA}, RequestTTL: time.Hour,
			Grants: &approvals.GrantRule{MaxTTL: time.Hour, Match: []string{"invoice"}, Amount: "amount_cents"}}
		b.svc.Tools = tools
	}
	req := approvalstest.Submit(t, b.svc, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
		RunID: new("r-granting"), Step: new(fmt.Sprint(n + 1)), Tool: new("billing.grant"),
		Effect: new(fmt.Sprintf(`{"invoice":"inv_%d","amount_cents":4200}`, n)),
	}))
	d := approve(req, approverA)
	d.Grant = time.Hour
	out, err := b.svc.Decide(b.ctx, d)
	if err != nil || out.Grant == nil {
		t.Fatalf("approving with a grant = %+v, %v", out, err)
	}
	return *out.Grant
}

// An admin agent lists the live grants and revokes one; an intent the
// grant covers is approved by it at intake (by grant:<id>, via grant)
// until then and asks again after; any other agent finds no such route;
// revoking twice changes nothing.
func TestAdminRoutesListAndRevokeGrants(t *testing.T) {
	b := setup(t)
	g := b.grant(t, 1)

	covered := b.post(t, grantBody(1, 1, 4000)).view(t)
	if string(covered.Status) != string(store.RequestApproved) || covered.Decision == nil ||
		covered.Decision.By != "grant:"+g.ID || covered.Decision.Via != approvals.ViaGrant {
		t.Fatalf("a covered intent = %s, %+v", covered.Status, covered.Decision)
	}
	if other := b.post(t, grantBody(2, 2, 4000)).view(t); string(other.Status) != string(store.RequestPending) {
		t.Errorf("another invoice's intent = %s", other.Status)
	}

	list := b.do(t, http.MethodGet, "/v1/grants", adminToken, nil, nil)
	var got struct {
		Grants []struct {
			ID, Grantor, Tool, Agent string
			Match                    map[string]json.RawMessage
			AmountCeiling            *string `json:"amount_ceiling"`
		}
	}
	if err := json.Unmarshal(list.body, &got); err != nil || list.status != http.StatusOK || len(got.Grants) != 1 ||
		got.Grants[0].ID != g.ID || got.Grants[0].Grantor != approverA || string(got.Grants[0].Match["invoice"]) != `"inv_1"` ||
		got.Grants[0].AmountCeiling == nil || *got.Grants[0].AmountCeiling != "4200" {
		t.Fatalf("GET /v1/grants = %d %s", list.status, list.body)
	}
	if r := b.do(t, http.MethodGet, "/v1/grants", testToken, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("a non-admin agent's listing = %d %s", r.status, r.body)
	}
	if r := b.do(t, http.MethodPost, "/v1/grants/"+g.ID+"/revoke", testToken, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("a non-admin agent's revocation = %d %s", r.status, r.body)
	}
	if r := b.do(t, http.MethodPost, "/v1/grants/nosuchgrant/revoke", adminToken, nil, nil); r.status != http.StatusNotFound {
		t.Errorf("revoking no grant = %d %s", r.status, r.body)
	}

	revoked := b.do(t, http.MethodPost, "/v1/grants/"+g.ID+"/revoke", adminToken, nil, nil)
	if revoked.status != http.StatusOK || !strings.Contains(string(revoked.body), `"revoked_by":"agent:ops"`) {
		t.Fatalf("revoke = %d %s", revoked.status, revoked.body)
	}
	again := b.do(t, http.MethodPost, "/v1/grants/"+g.ID+"/revoke", adminToken, nil, nil)
	if again.status != http.StatusOK || !strings.Contains(string(again.body), `"revoked_by":"agent:ops"`) {
		t.Errorf("revoke again = %d %s", again.status, again.body)
	}
	if n := b.count(t, `SELECT count(*) FROM events WHERE kind = 'grant_revoked'`); n != 1 {
		t.Errorf("revocations audited = %d", n)
	}
	if after := b.post(t, grantBody(3, 1, 4000)).view(t); string(after.Status) != string(store.RequestPending) {
		t.Errorf("a covered intent after the revocation = %s", after.Status)
	}
	if r := b.do(t, http.MethodGet, "/v1/grants", adminToken, nil, nil); !strings.Contains(string(r.body), `"grants":[]`) {
		t.Errorf("the listing after the revocation = %s", r.body)
	}
}

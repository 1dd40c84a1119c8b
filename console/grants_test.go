package console

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
)

// grantOn approves req as by, with a standing grant of an hour, and
// returns the grant.
func (b *bundle) grantOn(t *testing.T, req store.Request, by string) approvals.Grant {
	t.Helper()
	out, err := b.svc.Decide(t.Context(), approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack", Grant: time.Hour})
	if err != nil || out.Err() != nil {
		t.Fatalf("approving %s with a grant: %v, %v", req.ID, err, out.Err())
	}
	grants, err := b.svc.Grants(t.Context(), by, false)
	if err != nil || len(grants) != 1 {
		t.Fatalf("%s's grants = %+v, %v", by, grants, err)
	}
	return grants[0]
}

// allowGrants lets the test's tools make standing grants.
func (b *bundle) allowGrants() {
	for name, tool := range b.svc.Tools {
		tool.Grants = &approvals.GrantRule{MaxTTL: 2 * time.Hour, Match: []string{"invoice"}, Amount: "amount_cents"}
		b.svc.Tools[name] = tool
	}
}

// The grants page lists the live grants on the requests a reviewer
// approves, whoever granted them, with what they match and when they end;
// an approver revokes one with the session's CSRF token, which the audit
// records and after which a matching write asks again. A reviewer outside
// the tool's approvers sees neither the grant nor what it matches, and
// cannot revoke it.
func TestGrantsListAndRevoke(t *testing.T) {
	b := setup(t)
	b.allowGrants()
	billing := b.grantOn(t, b.submit(t, toolName, "Credit to inv_granted"), alice)
	payroll := b.grantOn(t, b.submit(t, otherTool, "Raise for emp_granted"), eve)
	if covered := b.submit(t, toolName, "Credit under the grant"); covered.Status != store.RequestApproved {
		t.Fatalf("a write under alice's grant is %s, want approved", covered.Status)
	}

	member := b.browser(t)
	member.login("bob@example.com", "finance")
	resp, page := member.get(Prefix + "/grants")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="grant-`+billing.ID+`"`) ||
		!strings.Contains(page, alice) || !strings.Contains(page, `invoice is &#34;inv_8841&#34;`) || !strings.Contains(page, "amount_cents is at most 4200") {
		t.Fatalf("bob's grants page does not list alice's billing grant:\n%s", page)
	}
	if strings.Contains(page, payroll.ID) {
		t.Fatalf("bob's grants page lists payroll's grant:\n%s", page)
	}

	outsider := b.browser(t)
	outsider.login("eve@example.com")
	_, page = outsider.get(Prefix + "/grants")
	if strings.Contains(page, billing.ID) || strings.Contains(page, "billing.credit") || !strings.Contains(page, `id="grant-`+payroll.ID+`"`) {
		t.Fatalf("eve's grants page should list payroll's grant and nothing of billing's:\n%s", page)
	}
	outsider.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = outsider.post(Prefix+"/grants/revoke", url.Values{"csrf": {csrf(t, page)}, "grant": {billing.ID}}, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "notice="+reviewpage.NoticeNoGrant) {
		t.Fatalf("an outsider's revoke answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	member.client.CheckRedirect = outsider.client.CheckRedirect
	_, page = member.get(Prefix + "/grants")
	token := csrf(t, page)
	for name, form := range map[string]url.Values{
		"without the CSRF token": {"grant": {billing.ID}},
		"with a wrong token":     {"grant": {billing.ID}, "csrf": {token + "x"}},
	} {
		if resp, _ := member.post(Prefix+"/grants/revoke", form, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a revoke %s answered %d, want 403", name, resp.StatusCode)
		}
	}
	resp, _ = member.post(Prefix+"/grants/revoke", url.Values{"grant": {billing.ID}, "csrf": {token}},
		http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site revoke answered %d, want 403", resp.StatusCode)
	}
	if g, err := b.store.GrantByID(t.Context(), billing.ID); err != nil || g.RevokedAt != nil {
		t.Fatalf("after refused revokes the grant is %+v, %v; want live", g, err)
	}

	resp, _ = member.post(Prefix+"/grants/revoke", url.Values{"grant": {billing.ID}, "csrf": {token}}, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "notice="+reviewpage.NoticeRevoked) {
		t.Fatalf("bob's revoke answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	g, err := b.store.GrantByID(t.Context(), billing.ID)
	if err != nil || g.RevokedAt == nil || g.RevokedBy != bob {
		t.Fatalf("after bob's revoke the grant is %+v, %v", g, err)
	}
	h, err := b.store.HistoryOf(t.Context(), billing.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, e := range h.Events {
		audited = audited || (e.Kind == store.EventGrantRevoked && e.Actor == bob)
	}
	if !audited {
		t.Fatalf("the audit has no grant_revoked by %s: %+v", bob, h.Events)
	}
	resp, _ = member.post(Prefix+"/grants/revoke", url.Values{"grant": {billing.ID}, "csrf": {token}}, nil)
	if !strings.HasSuffix(resp.Header.Get("Location"), "notice="+reviewpage.NoticeNotRevoked) {
		t.Errorf("a second revoke redirected to %q", resp.Header.Get("Location"))
	}
	member.client.CheckRedirect = nil
	if _, page = member.get(Prefix + "/grants?notice=" + reviewpage.NoticeRevoked); strings.Contains(page, `id="grant-`+billing.ID+`"`) || !strings.Contains(page, `data-code="revoked"`) {
		t.Fatalf("after the revoke the grants page reads:\n%s", page)
	}
	if after := b.submit(t, toolName, "Credit after the revoke"); after.Status != store.RequestPending {
		t.Fatalf("a write after the revoke is %s, want pending", after.Status)
	}
}

package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// A reviewer signs in at the provider, finds the request in the queue and
// on its page, and approves it with the session's CSRF token: the store
// records the decision, by the reviewer, via the console.
func TestSignInQueueAndApprove(t *testing.T) {
	b := setup(t)
	req := b.submit(t, toolName, "Credit 42.00 USD to inv_console")
	br := b.browser(t)
	br.login("Alice@Example.com") // the email's case is the provider's; the id is in lower case

	_, queue := br.get(Prefix + "/")
	if !strings.Contains(queue, `id="row-`+req.ID+`"`) || !strings.Contains(queue, "inv_console") {
		t.Fatalf("the queue does not list the pending request:\n%s", queue)
	}
	for query, listed := range map[string]bool{"?tool=" + toolName: true, "?tool=" + otherTool: false,
		"?agent=billing-agent": true, "?agent=other": false, "?older_than=1h": false, "?older_than=0s": true} {
		if _, q := br.get(Prefix + "/" + query); strings.Contains(q, `id="row-`+req.ID+`"`) != listed {
			t.Errorf("the queue filtered by %s lists the request: %v, want %v", query, !listed, listed)
		}
	}
	resp, page := br.get(Prefix + "/requests/" + req.ID)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "inv_8841") || !strings.Contains(page, `class="short-key"`) {
		t.Fatalf("the request page answered %d without the effect or the key:\n%s", resp.StatusCode, page)
	}
	for _, c := range br.client.Jar.Cookies(mustURL(t, b.srv.URL+Prefix+"/")) {
		if c.Name == SessionCookie && c.Value == "" {
			t.Fatal("the session cookie is empty")
		}
	}

	resp, page = br.post(Prefix+"/decide", decisionForm(req, "approve", csrf(t, page)), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-code="decided"`) {
		t.Fatalf("approving answered %d:\n%s", resp.StatusCode, page)
	}
	if s := b.status(t, req.ID); s != store.RequestApproved {
		t.Fatalf("the request is %s after the approval, want approved", s)
	}
	d, err := b.store.HistoryOf(t.Context(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Decision == nil || d.Decision.DecidedBy != alice || d.Decision.Via != Via {
		t.Fatalf("the decision is %+v, want one by %s via %s", d.Decision, alice, Via)
	}
	_, queue = br.get(Prefix + "/")
	if strings.Contains(queue, `id="row-`+req.ID+`"`) {
		t.Fatal("the queue still lists the decided request")
	}

	// Signing out ends the session, and the sign-in at the provider, which
	// sends the browser back to the console, which asks for a sign-in.
	resp, page = br.post(Prefix+"/logout", url.Values{"csrf": {csrf(t, queue)}}, nil)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login/username" {
		t.Fatalf("signing out ended at %s with %d, not the provider's sign-in:\n%s", resp.Request.URL, resp.StatusCode, page)
	}
	br.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ = br.get(Prefix + "/")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), Prefix+"/login") {
		t.Fatalf("after signing out the queue answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// A reviewer who approves through an IdP group listed in the ID token's
// groups claim sees and decides the request; one outside the approvers sees
// neither the request in the queue nor its page, and cannot decide it.
func TestGroupsAndOutsiders(t *testing.T) {
	b := setup(t)
	req := b.submit(t, toolName, "Credit to inv_group")
	payroll := b.submit(t, otherTool, "Raise for emp_7")

	outsider := b.browser(t)
	outsider.login("eve@example.com", "engineering")
	_, queue := outsider.get(Prefix + "/")
	if strings.Contains(queue, req.ID) || strings.Contains(queue, "inv_group") {
		t.Fatalf("an outsider's queue lists billing's request:\n%s", queue)
	}
	if !strings.Contains(queue, payroll.ID) {
		t.Fatalf("eve's queue lacks the payroll request she approves:\n%s", queue)
	}
	for _, ref := range []string{req.ID, req.Key} {
		resp, page := outsider.get(Prefix + "/requests/" + ref)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(page, "inv_8841") {
			t.Fatalf("an outsider's request page for %s answered %d:\n%s", ref, resp.StatusCode, page)
		}
	}
	resp, page := outsider.post(Prefix+"/decide", decisionForm(req, "approve", csrf(t, queue)), nil)
	if resp.StatusCode != http.StatusNotFound || strings.Contains(page, "inv_8841") {
		t.Fatalf("an outsider's decision answered %d:\n%s", resp.StatusCode, page)
	}
	resp, page = outsider.get(Prefix + "/batch?id=" + req.ID)
	if resp.StatusCode != http.StatusOK || strings.Contains(page, "inv_8841") || !strings.Contains(page, `id="skipped"`) {
		t.Fatalf("an outsider's batch confirmation answered %d:\n%s", resp.StatusCode, page)
	}
	// Nor can the outsider approve it by sending a confirmation the
	// console never showed them.
	item := fmt.Sprintf("%s %d %s", req.ID, req.Round, req.PayloadHash)
	resp, page = outsider.post(Prefix+"/batch", url.Values{"csrf": {csrf(t, queue)}, "item": {item}}, nil)
	if resp.StatusCode != http.StatusOK || strings.Contains(page, "inv_8841") || strings.Contains(page, "inv_group") ||
		!strings.Contains(page, `data-code="`+approvals.CodeNotFound+`"`) {
		t.Fatalf("an outsider's batch approval answered %d:\n%s", resp.StatusCode, page)
	}
	if s := b.status(t, req.ID); s != store.RequestPending {
		t.Fatalf("the request is %s after an outsider's attempts, want pending", s)
	}

	member := b.browser(t)
	member.login("bob@example.com", "finance")
	_, queue = member.get(Prefix + "/")
	if !strings.Contains(queue, req.ID) || strings.Contains(queue, payroll.ID) {
		t.Fatalf("a finance member's queue should list billing's request and not payroll's:\n%s", queue)
	}
	resp, page = member.post(Prefix+"/decide", decisionForm(req, "reject", csrf(t, queue)), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-code="decided"`) {
		t.Fatalf("a finance member's reject answered %d:\n%s", resp.StatusCode, page)
	}
	d, err := b.store.HistoryOf(t.Context(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Decision == nil || d.Decision.DecidedBy != bob || d.Decision.Verdict != store.VerdictReject {
		t.Fatalf("the decision is %+v, want a reject by %s", d.Decision, bob)
	}
}

// Nothing decides without a session, without the session's CSRF token, or
// from another site.
func TestUnsafeRequestsDecideNothing(t *testing.T) {
	b := setup(t)
	req := b.submit(t, toolName, "Credit to inv_csrf")

	anon := b.browser(t)
	anon.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, _ := anon.get(Prefix + "/requests/" + req.ID)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != Prefix+"/login?next="+url.QueryEscape(Prefix+"/requests/"+req.ID) {
		t.Fatalf("without a session the request page answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = anon.post(Prefix+"/decide", decisionForm(req, "approve", "forged"), nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), Prefix+"/login") {
		t.Fatalf("without a session a decision answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	br := b.browser(t)
	br.login("alice@example.com")
	_, page := br.get(Prefix + "/requests/" + req.ID)
	token := csrf(t, page)
	resp, page = br.post(Prefix+"/decide", decisionForm(req, "approve", ""), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a decision without the CSRF token answered %d:\n%s", resp.StatusCode, page)
	}
	resp, page = br.post(Prefix+"/decide", decisionForm(req, "approve", token+"x"), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a decision with a wrong CSRF token answered %d:\n%s", resp.StatusCode, page)
	}
	resp, page = br.post(Prefix+"/decide", decisionForm(req, "approve", token),
		http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}})
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a cross-site decision answered %d:\n%s", resp.StatusCode, page)
	}
	// Another browser's session token does not pass for this one's.
	other := b.browser(t)
	other.login("alice@example.com")
	resp, _ = other.post(Prefix+"/decide", decisionForm(req, "approve", token), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a decision with another session's token answered %d", resp.StatusCode)
	}
	if s := b.status(t, req.ID); s != store.RequestPending {
		t.Fatalf("the request is %s, want pending: a refused form decided it", s)
	}
	// A forged session cookie opens nothing.
	forged := b.browser(t)
	forged.client.CheckRedirect = anon.client.CheckRedirect
	forged.client.Jar.SetCookies(mustURL(t, b.srv.URL+Prefix+"/"), []*http.Cookie{{Name: SessionCookie, Value: "eyJwIjoic2Vzc2lvbiIsImUiOjk5OTk5OTk5OTksInUiOiJvaWRjOmFsaWNlQGV4YW1wbGUuY29tIn0.AAAA", Path: Prefix + "/"}})
	resp, _ = forged.get(Prefix + "/")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a forged session cookie answered %d, want a redirect to sign in", resp.StatusCode)
	}
}

// Batch approval lists exactly the chosen requests on a confirmation page
// that decides nothing; the confirming POST approves each.
func TestBatchApprovalConfirmsFirst(t *testing.T) {
	b := setup(t)
	one := b.submit(t, toolName, "Credit to inv_one")
	two := b.submit(t, toolName, "Credit to inv_two")
	left := b.submit(t, toolName, "Credit to inv_left")
	br := b.browser(t)
	br.login("alice@example.com")

	resp, page := br.get(Prefix + "/batch?id=" + one.ID + "&id=" + two.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the confirmation answered %d:\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, `id="confirm-`+one.ID+`"`) || !strings.Contains(page, `id="confirm-`+two.ID+`"`) || strings.Contains(page, left.ID) {
		t.Fatalf("the confirmation should list exactly the two chosen:\n%s", page)
	}
	for _, r := range []store.Request{one, two, left} {
		if s := b.status(t, r.ID); s != store.RequestPending {
			t.Fatalf("%s is %s after the confirmation page alone, want pending", r.ID, s)
		}
	}
	form := url.Values{"csrf": {csrf(t, page)}}
	for _, m := range itemRE.FindAllStringSubmatch(page, -1) {
		form.Add("item", m[1])
	}
	if len(form["item"]) != 2 {
		t.Fatalf("the confirmation carries %d items, want 2", len(form["item"]))
	}
	resp, page = br.post(Prefix+"/batch", form, nil)
	if resp.StatusCode != http.StatusOK || strings.Count(page, `data-code="decided"`) != 2 {
		t.Fatalf("the confirming POST answered %d:\n%s", resp.StatusCode, page)
	}
	for r, want := range map[string]store.RequestStatus{one.ID: store.RequestApproved, two.ID: store.RequestApproved, left.ID: store.RequestPending} {
		if s := b.status(t, r); s != want {
			t.Errorf("%s is %s, want %s", r, s, want)
		}
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

package inbox

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// Everything an agent wrote reaches the page as text, never as markup.
func TestPagesEscapeAgentText(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, &approvalstest.IntentOpts{
			Summary: new(`<script>alert("summary")</script>`),
			Reason:  new(`"><img src=x onerror=alert(1)>`),
			Effect:  new(`{"invoice":"inv_8841","note":"<script>alert('effect')</script>"}`),
		})
		for _, path := range []string{DefaultPrefix + "/", DefaultPrefix + "/requests/" + req.ID, DefaultPrefix + "/lookup?q=" + req.Key[:16]} {
			status, page := get(t, b.server, path)
			if status != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", path, status, page)
			}
			for _, raw := range []string{"<script>", "<img"} {
				if strings.Contains(page, raw) {
					t.Errorf("GET %s carries %q unescaped", path, raw)
				}
			}
			for _, want := range []string{
				"&lt;script&gt;alert(&#34;summary&#34;)&lt;/script&gt;",
				"&#34;&gt;&lt;img src=x onerror=alert(1)&gt;",
				"&lt;script&gt;alert(&#39;effect&#39;)&lt;/script&gt;",
			} {
				if !strings.Contains(page, want) {
					t.Errorf("GET %s lacks the escaped text %q", path, want)
				}
			}
		}
	})
}

// The inbox shows each pending request as its card does, newest first, with
// buttons that carry what a Slack button carries.
func TestInboxShowsPendingCardsNewestFirst(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		older := b.submit(t, &approvalstest.IntentOpts{Summary: new("older request")})
		newer := b.submit(t, &approvalstest.IntentOpts{Summary: new("newer request")})
		_, page := get(t, b.server, DefaultPrefix+"/")
		if i, j := strings.Index(page, "newer request"), strings.Index(page, "older request"); i < 0 || j < 0 || i > j {
			t.Fatalf("pending requests not newest first:\n%s", page)
		}
		for _, want := range []string{
			"<code>" + toolName + "</code>", "customer reported duplicate charge per ticket 5512", "billing-agent", requester,
			approvals.ShortKey(older.Key), `&#34;amount_cents&#34;: 4200`, "round 1",
			`name="request_id" value="` + newer.ID + `"`, `name="round" value="1"`, `name="payload_hash" value="` + newer.PayloadHash + `"`,
			`value="approve"`, `value="reject"`, "I understand this cannot be undone",
		} {
			if !strings.Contains(page, want) {
				t.Errorf("inbox lacks %q", want)
			}
		}
	})
}

// Approving twice records one decision; the second click is told so.
func TestApproveTwiceDecidesOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		form := decisionForm(req, store.VerdictApprove)

		notice, page := decide(t, b.server, form)
		if notice != noticeDecided || !strings.Contains(page, noticeFor(noticeDecided, lookup.Detail{}).Message) || !strings.Contains(page, "approve</span> by "+reviewer) || !strings.Contains(page, "via inbox") {
			t.Fatalf("first approval: notice %q\n%s", notice, page)
		}
		notice, page = decide(t, b.server, form)
		if notice != approvals.CodeAlreadyDecided || !strings.Contains(page, "Already approved by "+reviewer+" at ") {
			t.Fatalf("second approval: notice %q\n%s", notice, page)
		}
		if n := b.count(t, `SELECT count(*) FROM decisions WHERE request_id = $1`, req.ID); n != 1 {
			t.Fatalf("%d decisions, want 1", n)
		}
		if n := b.count(t, `SELECT count(*) FROM executions WHERE request_id = $1`, req.ID); n != 1 {
			t.Fatalf("%d executions, want 1", n)
		}
		if strings.Contains(page, `value="approve"`) {
			t.Error("a decided request still offers Approve")
		}
	})
}

func TestReject(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		notice, page := decide(t, b.server, decisionForm(req, store.VerdictReject))
		if notice != "decided" || !strings.Contains(page, "reject</span> by "+reviewer) || !strings.Contains(page, `id="status">rejected<`) {
			t.Fatalf("notice %q\n%s", notice, page)
		}
		if n := b.count(t, `SELECT count(*) FROM executions WHERE request_id = $1`, req.ID); n != 0 {
			t.Fatalf("a rejected request has %d executions", n)
		}
	})
}

// Each refusal of Service.Decide has its own code and words, those of
// approvals.RefusalFor, and records nothing.
func TestRefusedDecisionsSayWhy(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		asOutsider := b.serve(t, Options{Reviewer: outsider})
		asRequester := b.serve(t, Options{Reviewer: requester})
		cases := []struct {
			name   string
			notice string
			post   func(t *testing.T) (string, string)
		}{
			{"stale card", approvals.CodeStaleCard, func(t *testing.T) (string, string) {
				form := decisionForm(b.submit(t, nil), store.VerdictApprove)
				form.Set(fieldPayloadHash, "sha256:00")
				return decide(t, b.server, form)
			}},
			{"not an approver", approvals.CodeNotApprover, func(t *testing.T) (string, string) {
				return decide(t, asOutsider, decisionForm(b.submit(t, nil), store.VerdictApprove))
			}},
			{"self-approval", approvals.CodeSelfApproval, func(t *testing.T) (string, string) {
				return decide(t, asRequester, decisionForm(b.submit(t, nil), store.VerdictApprove))
			}},
			{"no longer pending", approvals.CodeAlreadyDecided, func(t *testing.T) (string, string) {
				req := b.submit(t, nil)
				if _, err := b.svc.Cancel(b.ctx, approvals.Agent{Name: "billing-agent"}, req.ID); err != nil {
					t.Fatal(err)
				}
				return decide(t, b.server, decisionForm(req, store.VerdictApprove))
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				notice, page := c.post(t)
				want, ok := approvals.RefusalByCode(c.notice)
				if c.notice == approvals.CodeAlreadyDecided {
					want = approvals.RefusalFor(&approvals.NotPendingError{Status: store.RequestCancelled})
				} else if !ok {
					t.Fatalf("no words for %q", c.notice)
				}
				if notice != c.notice || !strings.Contains(page, html.EscapeString(want.Message)) {
					t.Fatalf("notice %q, want %q:\n%s", notice, c.notice, page)
				}
			})
		}
		if n := b.count(t, `SELECT count(*) FROM decisions`); n != 0 {
			t.Fatalf("%d decisions recorded by refused clicks", n)
		}
	})
}

// A request page follows an approved write until it settles.
func TestRequestPageFollowsARunningWrite(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		const refresh = `http-equiv="refresh"`
		if _, page := get(t, b.server, DefaultPrefix+"/requests/"+req.ID); strings.Contains(page, refresh) {
			t.Error("a pending request's page reloads itself")
		}
		_, page := decide(t, b.server, decisionForm(req, store.VerdictApprove))
		if !strings.Contains(page, refresh) || !strings.Contains(page, "ready") {
			t.Errorf("an approved, queued write's page does not follow it:\n%s", page)
		}
		if _, page := get(t, b.server, DefaultPrefix+"/requests/"+req.Key); !strings.Contains(page, req.ID) {
			t.Error("the request page does not answer to the key")
		}
		if status, _ := get(t, b.server, DefaultPrefix+"/requests/wa_nosuchkey"); status != http.StatusNotFound {
			t.Errorf("an unknown request answered %d", status)
		}
	})
}

func TestBlankSummariesSaySo(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, &approvalstest.IntentOpts{Summary: new("")})
		decide(t, b.server, decisionForm(req, store.VerdictApprove))
		status, page := get(t, b.server, DefaultPrefix+"/")
		if status != http.StatusOK || !strings.Contains(page, `<span class="none">no summary</span></td><td class="state">approved`) {
			t.Fatalf("the recently decided row does not mark the blank summary:\n%s", page)
		}
	})
}

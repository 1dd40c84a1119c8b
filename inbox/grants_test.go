package inbox

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// The inbox offers "Approve + allow similar" on a tool with grants; the
// grant it makes approves the next matching intent at intake, is listed on
// the grants page and revoked there, after which the same intent asks
// again. A grant over the tool's max_ttl is refused and records nothing.
func TestInboxGrantsApproveAndRevoke(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		tool := b.svc.Tools[toolName]
		tool.Grants = &approvals.GrantRule{MaxTTL: 2 * time.Hour, Match: []string{"invoice"}, Amount: "amount_cents"}
		b.svc.Tools[toolName] = tool

		refused := b.submit(t, nil)
		form := decisionForm(refused, store.VerdictApprove)
		form.Set(fieldGrant, "9000") // 2.5h: over max_ttl
		if code, _ := decide(t, b.server, form); code != noticeGrantRefused {
			t.Fatalf("a grant over max_ttl: notice %q", code)
		}
		if n := b.count(t, `SELECT count(*) FROM votes`) + b.count(t, `SELECT count(*) FROM grants`); n != 0 {
			t.Fatalf("a refused grant recorded %d rows", n)
		}

		req := b.submit(t, nil)
		_, page := get(t, b.server, DefaultPrefix+"/requests/"+req.ID)
		if !strings.Contains(page, "Approve + allow similar for 2h") || !strings.Contains(page, `name="grant" value="7200"`) {
			t.Fatalf("the request page offers no grant:\n%s", page)
		}
		form = decisionForm(req, store.VerdictApprove)
		form.Set(fieldGrant, "7200")
		if code, _ := decide(t, b.server, form); code != noticeGranted {
			t.Fatalf("approve + allow similar: notice %q", code)
		}
		grants, err := b.svc.Grants(b.ctx, reviewer, false)
		if err != nil || len(grants) != 1 || grants[0].Grantor != reviewer {
			t.Fatalf("grants = %+v, %v", grants, err)
		}
		g := grants[0]

		if covered := b.submit(t, nil); covered.Status != store.RequestApproved {
			t.Fatalf("a matching intent under the grant is %s", covered.Status)
		}
		_, page = get(t, b.server, DefaultPrefix+"/grants")
		if !strings.Contains(page, `id="grant-`+g.ID+`"`) || !strings.Contains(page, `invoice is &#34;inv_8841&#34;`) {
			t.Fatalf("the grants page does not list the grant:\n%s", page)
		}
		resp := post(t, b.server, DefaultPrefix+"/grants/revoke", url.Values{"id": {g.ID}}, nil)
		if status, body := readAll(t, resp); status != http.StatusSeeOther || !strings.HasSuffix(resp.Header.Get("Location"), "notice="+reviewpage.NoticeRevoked) {
			t.Fatalf("revoke answered %d %s:\n%s", status, resp.Header.Get("Location"), body)
		}
		resp = post(t, b.server, DefaultPrefix+"/grants/revoke", url.Values{"id": {g.ID}}, nil)
		if _, _ = readAll(t, resp); !strings.HasSuffix(resp.Header.Get("Location"), "notice="+reviewpage.NoticeNotRevoked) {
			t.Errorf("a second revoke redirected to %s", resp.Header.Get("Location"))
		}
		if after := b.submit(t, nil); after.Status != store.RequestPending {
			t.Fatalf("a matching intent after the revocation is %s", after.Status)
		}
		if _, page = get(t, b.server, DefaultPrefix+"/grants"); strings.Contains(page, `id="grant-`+g.ID+`"`) {
			t.Errorf("a revoked grant is still listed")
		}
	})
}

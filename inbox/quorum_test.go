package inbox

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// The inbox card shows the policy, the votes and who may still act; an
// approval short of the policy is counted, a second one is a repeat; Reject
// has a reason field, required here, and the reason reaches the page.
func TestInboxShowsVotesAndTakesAReason(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		tool := b.svc.Tools[toolName]
		tool.Approvers = append(tool.Approvers, "local:other")
		tool.Approvals, tool.RejectReason = 2, approvals.ReasonRequired
		b.svc.Tools[toolName] = tool

		req := b.submit(t, nil)
		_, page := get(t, b.server, DefaultPrefix+"/requests/"+req.ID)
		for _, want := range []string{"needs 2 approvals from " + reviewer, `name="reason"`, "required>"} {
			if !strings.Contains(page, want) {
				t.Errorf("pending page lacks %q", want)
			}
		}
		notice, page := decide(t, b.server, decisionForm(req, store.VerdictApprove))
		if notice != noticeCounted || !strings.Contains(page, "1 of 2 approvals: waiting for one more approver") ||
			!strings.Contains(page, `class="still-to-act">local:other<`) {
			t.Fatalf("after one approval: notice %q\n%s", notice, page)
		}
		if notice, _ := decide(t, b.server, decisionForm(req, store.VerdictApprove)); notice != noticeRepeat {
			t.Errorf("second approval's notice = %q", notice)
		}

		other := b.submit(t, nil)
		if notice, _ := decide(t, b.server, decisionForm(other, store.VerdictReject)); notice != approvals.CodeInvalidRequest {
			t.Errorf("reject without a reason: notice %q", notice)
		}
		if got := b.count(t, `SELECT count(*) FROM decisions`); got != 0 {
			t.Fatalf("decisions = %d", got)
		}
		form := decisionForm(other, store.VerdictReject)
		form.Set(fieldReason, "wrong invoice")
		notice, page = decide(t, b.server, form)
		if notice != noticeDecided || !strings.Contains(page, `<q class="decision-reason">wrong invoice</q>`) {
			t.Fatalf("reject with a reason: notice %q\n%s", notice, page)
		}
	})
}

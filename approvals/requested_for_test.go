package approvals

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/drivertest"
)

// requested_for names a user exactly as a surface names the clicker, or it
// is refused: a spelling the clicker's id never equals would let the person
// it names approve their own request.
func TestRequestedForMustBeAUserID(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		b := setupWith(t, d)
		bad := []string{
			strings.ToLower(requester), // u024be7lh
			"<@" + requester + ">",     // a mention
			requester + " ",
			"@" + requester,
			"local:",
			"ops@example.com",
			groupID,            // a user group is nobody in particular
			"slack:" + groupID, // with its scheme too
		}
		for i, id := range bad {
			in := newIntent(&intentOpts{RunID: ptr(fmt.Sprintf("r-for-svc-%d", i))})
			in.RequestedFor = id
			_, _, err := b.svc.Submit(b.ctx, "billing-agent", in)
			if ref := RefusalFor(err); ref.Code != CodeInvalidRequest || ref.Field != "/requested_for" {
				t.Errorf("requested_for %q: Submit = %v, refusal %+v", id, err, ref)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM requests`); n != 0 {
			t.Fatalf("%d refused requests were stored", n)
		}

		// A Slack user id is accepted, and the person it names may not
		// approve.
		req := b.submit(t, nil)
		if req.RequestedFor != requester {
			t.Fatalf("requested_for stored as %q", req.RequestedFor)
		}
		if _, err := b.svc.Decide(b.ctx, approve(req, requester)); !errors.Is(err, ErrSelfApproval) {
			t.Fatalf("the requester approving their own request: %v, want ErrSelfApproval", err)
		}
		if out, err := b.svc.Decide(b.ctx, approve(req, approverA)); err != nil || !out.Created {
			t.Fatalf("an approver approving: created %v, %v", out.Created, err)
		}

		// So is a local reviewer, whose name is compared without case.
		in := newIntent(&intentOpts{RunID: ptr("r-for-local")})
		in.RequestedFor = "local:reviewer"
		local, _, err := b.svc.Submit(b.ctx, "billing-agent", in)
		if err != nil {
			t.Fatalf("requested_for local:reviewer: %v", err)
		}
		if _, err := b.svc.Decide(b.ctx, approve(local, "local:Reviewer")); !errors.Is(err, ErrSelfApproval) {
			t.Fatalf("local:Reviewer approving a request for local:reviewer: %v, want ErrSelfApproval", err)
		}

		// A Slack id written with its scheme is stored bare, as a click
		// reports the clicker, and the same person still may not approve.
		in = newIntent(&intentOpts{RunID: ptr("r-for-scheme")})
		in.RequestedFor = "slack:" + requester
		schemed, _, err := b.svc.Submit(b.ctx, "billing-agent", in)
		if err != nil || schemed.RequestedFor != requester {
			t.Fatalf("requested_for slack:%s: stored as %q, %v", requester, schemed.RequestedFor, err)
		}
		if _, err := b.svc.Decide(b.ctx, approve(schemed, requester)); !errors.Is(err, ErrSelfApproval) {
			t.Fatalf("the requester approving a request for slack:%s: %v, want ErrSelfApproval", requester, err)
		}
	})
}

package inbox

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// Requests that left pending are listed under the cards, with their state.
func TestInboxListsRecentlyDecided(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		approved := b.submit(t, &approvalstest.IntentOpts{Summary: new("approved one")})
		rejected := b.submit(t, &approvalstest.IntentOpts{Summary: new("rejected one")})
		b.submit(t, &approvalstest.IntentOpts{Summary: new("still pending")})
		decide(t, b.server, decisionForm(approved, store.VerdictApprove))
		decide(t, b.server, decisionForm(rejected, store.VerdictReject))

		_, page := get(t, b.server, DefaultPrefix+"/")
		_, decided, found := strings.Cut(page, "Recently decided")
		if !found {
			t.Fatalf("no recently decided list:\n%s", page)
		}
		for _, want := range []string{"approved one", "approve by " + reviewer + " via inbox", "ready (0 of 3)", "rejected one", "reject by " + reviewer} {
			if !strings.Contains(decided, want) {
				t.Errorf("recently decided lacks %q:\n%s", want, decided)
			}
		}
		if strings.Contains(decided, "still pending") {
			t.Error("a pending request is listed as decided")
		}
	})
}

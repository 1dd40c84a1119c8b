package inbox

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// The request page's timeline shows a reminder and an escalation with
// whom they mentioned, as the audit trail recorded them.
func TestRequestPageShowsRemindersAndEscalations(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		if _, err := b.store.QueueNudges(b.ctx, []store.NewNudge{
			{Kind: store.NudgeReminder, RequestID: req.ID, Round: 1, Mention: []string{"U0ANA", "S0FINANCE"}, Data: map[string]any{"after": "30m0s"}},
			{Kind: store.NudgeEscalation, RequestID: req.ID, Round: 1, Mention: []string{"S0ONCALL"}, Data: map[string]any{"after": "2h0m0s"}},
		}); err != nil {
			t.Fatal(err)
		}
		status, page := get(t, b.server, DefaultPrefix+"/requests/"+req.ID)
		if status != http.StatusOK {
			t.Fatalf("request page = %d", status)
		}
		for _, want := range []string{"<td>reminded</td><td>system</td>", "mention=U0ANA S0FINANCE", "<td>escalated</td>", "mention=S0ONCALL", "after=2h0m0s"} {
			if !strings.Contains(page, want) {
				t.Errorf("the request page lacks %q", want)
			}
		}
	})
}

package bot_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/storetest"
)

// With its database out of reach, a click and a slash command still get
// Slack's 200, and the person hears to try again in a moment.
func TestDatabaseOutageAsksToTryAgain(t *testing.T) {
	t.Parallel()
	// A migrated database, behind a port nothing listens on.
	b := setup(t, &options{dbURL: storetest.UnreachableURL(t, storetest.NewURL(t)), resolver: &fakeResolver{}})

	const id = "7d4f8a52-0b6e-4c47-9d1e-2f1a3c5b6e70"
	decision, _ := json.Marshal(map[string]any{"r": id, "n": 1, "h": "sha256:00"})
	if status := b.click("UANA", billingChan, "approve", string(decision)); status != http.StatusOK {
		t.Errorf("approve click answered %d, want 200", status)
	}
	resolution, _ := json.Marshal(map[string]any{"r": id, "x": 1})
	if status := b.click("UBEN", billingChan, "mark_succeeded", string(resolution)); status != http.StatusOK {
		t.Errorf("resolution click answered %d, want 200", status)
	}
	for _, user := range []string{"UANA", "UBEN"} {
		if got := b.ephemerals(user); len(got) != 1 || !strings.Contains(got[0], "cannot reach its database") {
			t.Errorf("%s heard %q, want that the database cannot be reached", user, got)
		}
	}
	if got := b.command("UANA", "inv_8841"); !strings.Contains(got, "cannot reach its database") {
		t.Errorf("/countersign inv_8841 answered %q, want that the database cannot be reached", got)
	}
}

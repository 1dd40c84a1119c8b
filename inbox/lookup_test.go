package inbox

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

var keyPattern = regexp.MustCompile(`wa_[0-9a-f]{64}`)

// keysIn returns the distinct full keys a text mentions, sorted.
func keysIn(text string) []string {
	keys := keyPattern.FindAllString(text, -1)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// The lookup box finds the same requests as /countersign does for the same text.
func TestLookupAnswersAsTheSlashCommand(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		approved := b.submit(t, &approvalstest.IntentOpts{Effect: new(`{"invoice":"inv_lookup_1","amount_cents":100}`)})
		decide(t, b.server, decisionForm(approved, store.VerdictApprove))
		b.submit(t, &approvalstest.IntentOpts{Effect: new(`{"invoice":"inv_shared","amount_cents":1}`)})
		b.submit(t, &approvalstest.IntentOpts{Effect: new(`{"invoice":"inv_shared","amount_cents":2}`)})

		for _, c := range []struct {
			text string
			want int // requests the answer names
			also string
		}{
			{approved.Key[:14], 1, "Execution"},
			{"inv_lookup_1", 1, "Timeline"},
			{"inv_shared", 2, "2 requests have an effect holding"},
			{"pending", 2, "Waiting for a decision"},
		} {
			_, answer, err := lookup.Find(b.ctx, b.store, c.text)
			if err != nil {
				t.Fatal(err)
			}
			slack := keysIn(bot.LookupText(answer))
			status, page := get(t, b.server, DefaultPrefix+"/lookup?q="+url.QueryEscape(c.text))
			if status != http.StatusOK {
				t.Fatalf("lookup %q: %d\n%s", c.text, status, page)
			}
			inbox := keysIn(page)
			if len(slack) != c.want || !slices.Equal(inbox, slack) {
				t.Errorf("lookup %q names %v; the slash command names %v", c.text, inbox, slack)
			}
			if !strings.Contains(page, c.also) {
				t.Errorf("lookup %q lacks %q:\n%s", c.text, c.also, page)
			}
			if !strings.Contains(page, `value="`+c.text+`"`) {
				t.Errorf("lookup %q does not keep the text in the box", c.text)
			}
		}
		if _, page := get(t, b.server, DefaultPrefix+"/lookup?q=wa_12"); !strings.Contains(page, "at least 8 characters") {
			t.Errorf("a short prefix is not explained:\n%s", page)
		}
	})
}

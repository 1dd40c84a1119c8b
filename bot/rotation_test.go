package bot_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/drivertest"
)

// While Slack's signing secret is rotated the bot holds the old and the new
// one: a command or a click signed with either is accepted, and one signed
// with neither is refused before it is parsed.
func TestEitherSigningSecretVerifiesDuringRotation(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		const oldSecret, newSecret = "slack-signing-old", "slack-signing-new"
		b := setup(t, &options{driver: drv, signingSecrets: []string{oldSecret, newSecret}})

		command := bottest.CommandForm("UANA", billingChan, "help")
		for _, signer := range []string{oldSecret, newSecret} {
			status, out := b.post("/slack/commands", command, bottest.Sign(signer, time.Now(), command))
			if status != http.StatusOK || !strings.Contains(out, "countersign lookups") {
				t.Errorf("a command signed with %s: status %d: %s", signer, status, out)
			}
		}
		if status, _ := b.post("/slack/commands", command, bottest.Sign(secret, time.Now(), command)); status != http.StatusUnauthorized {
			t.Errorf("a command signed with neither secret: status %d, want 401", status)
		}

		// Clicks: one per secret records a decision; one signed with
		// neither records nothing.
		refused := b.submit(intent{n: 1})
		click := bottest.ClickForm(bottest.ClickPayload("UANA", billingChan, "approve", decisionValue(refused)))
		if status, _ := b.post("/slack/interactions", click, bottest.Sign(secret, time.Now(), click)); status != http.StatusUnauthorized {
			t.Errorf("a click signed with neither secret: status %d, want 401", status)
		}
		for i, signer := range []string{oldSecret, newSecret} {
			req := b.submit(intent{n: 2 + i})
			click := bottest.ClickForm(bottest.ClickPayload("UANA", billingChan, "approve", decisionValue(req)))
			if status, out := b.post("/slack/interactions", click, bottest.Sign(signer, time.Now(), click)); status != http.StatusOK {
				t.Errorf("a click signed with %s: status %d: %s", signer, status, out)
			}
			if got := b.count(`SELECT count(*) FROM decisions WHERE request_id = $1`, req.ID); got != 1 {
				t.Errorf("a click signed with %s recorded %d decisions, want 1", signer, got)
			}
		}
		if got := b.count(`SELECT count(*) FROM decisions WHERE request_id = $1`, refused.ID); got != 0 {
			t.Errorf("the refused click recorded %d decisions", got)
		}
	})
}

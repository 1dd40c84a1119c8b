package bot_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/surface/previewhttp"
)

// A tool's card in Slack shows the write's preview, field by field before
// and after, asked of a provider on 127.0.0.1 that checks its signature;
// a provider that is slow past the timeout does not hold the card back past
// it (and a second), and the card says the preview is unavailable.
func TestSlackCardShowsThePreviewBeforeAndAfter(t *testing.T) {
	t.Parallel()
	secret := []byte("dispatch-secret")
	var unsigned atomic.Int32
	release := make(chan struct{})
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := client.VerifyRequest(secret, r, body, time.Minute); err != nil {
			unsigned.Add(1)
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		var in struct {
			Effect struct {
				Invoice string `json:"invoice"`
				Amount  int    `json:"amount_cents"`
			} `json:"effect"`
		}
		_ = json.Unmarshal(body, &in)
		if in.Effect.Invoice == "inv_slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"changes": []map[string]any{
			{"field": "balance_cents", "before": 1000, "after": 1000 + in.Effect.Amount},
			{"field": "status", "before": "open", "after": "credited"},
		}})
	}))
	t.Cleanup(func() { close(release); provider.Close() })

	const timeout = time.Second
	b := setup(t, &options{tools: map[string]approvals.Tool{"billing.preview": {Name: "billing.preview", Channel: billingChan,
		Approvers: []string{"UANA"}, MaxAttempts: 3, RequestTTL: time.Hour,
		Preview: &approvals.PreviewEndpoint{URL: provider.URL + "/preview", Timeout: timeout, Secrets: [][]byte{secret}}}}})
	logger := slog.New(slog.DiscardHandler)
	slackClient := b.slackClient()
	b.bot = bot.New(bot.Config{Slack: slackClient, Review: b.review, Cards: b.store, Lookup: lookup.Service{DB: b.store},
		Groups: bot.NewGroups(slackClient, time.Minute), SigningSecrets: []string{"test-signing-secret"}, Logger: logger,
		PostInterval: -1, Previews: previewhttp.New()})

	slow := b.submit(intent{tool: "billing.preview", invoice: "inv_slow"})
	shown := b.submit(intent{tool: "billing.preview", invoice: "inv_shown", n: 1})
	start := time.Now()
	b.deliver()
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("the cards took %s to post; want within the preview's timeout and a second (%s)", took, timeout+time.Second)
	}
	card := string(b.card(shown.ID, 1).Blocks)
	for _, want := range []string{"*What changes*", "• `balance_cents`: 1000 → *5201*", "• `status`: open → *credited*"} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	if card := string(b.card(slow.ID, 1).Blocks); !strings.Contains(card, "preview unavailable") {
		t.Errorf("the slow preview's card does not say it is unavailable:\n%s", card)
	}
	if n := unsigned.Load(); n != 0 {
		t.Errorf("%d preview calls failed the signature check", n)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/executor/providertest"
)

// A serve process on either store with a three-verdict policy: a small
// credit reaches the provider once with no click, decided by policy:small; a
// credit to a frozen invoice is 403 denied_by_policy on every post and never
// reaches the provider; a credit between them gets a card and waits.
func TestPolicyVerdictsEndToEnd(t *testing.T) {
	t.Parallel()
	forEachServeStore(t, testPolicyVerdicts)
}

func testPolicyVerdicts(t *testing.T, storeEnv map[string]string) {
	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	providerSrv := providertest.Start(t, provider)
	fake := bottest.New(t)
	env := quorumEnv(t, "", fake, fmt.Sprintf(`  billing.credit:
    approvers: [U1]
    dispatch: {url: "%s/credits"}
    key_aware: true
    tiers:
      - name: frozen-invoice
        when: {field: invoice, eq: inv_0}
        deny: "Credits to a frozen invoice are never sent."
      - name: small
        when: 'effect.amount_cents <= 5000 && effect.currency == "USD"'
        approvals: 0
`, providerSrv.URL))
	maps.Copy(env, storeEnv)
	p := startServeProcess(t, env)
	call := caller(t, http.DefaultClient, p.base)
	auth := map[string]string{"Authorization": "Bearer " + smokeToken}
	credit := func(step int, invoice string, cents int) string {
		return fmt.Sprintf(`{"run_id":"r-policy","step":%d,"tool":"billing.credit","effect":{"invoice":%q,"amount_cents":%d,"currency":"USD"}}`,
			step, invoice, cents)
	}

	// The denied and the asked intents go first: had either been queued for
	// the provider, it would be sent before the allowed one.
	for range 2 {
		code, body := call(http.MethodPost, "/v1/requests", credit(1, "inv_0", 100), auth)
		if code != http.StatusForbidden || !strings.Contains(string(body), `"code":"denied_by_policy"`) {
			t.Errorf("denied intent = %d %s", code, body)
		}
	}
	asked := postIntent(t, p.base, credit(2, "inv_2", 9000))
	until(t, 30*time.Second, "one card, for the asked intent", func() bool { return fake.Count("chat.postMessage") == 1 })

	allowed := postIntent(t, p.base, credit(3, "inv_1", 4200))
	until(t, 30*time.Second, "the allowed write to reach the provider", func() bool { return provider.Writes(allowed.Key) == 1 })
	var v struct {
		Status    string
		Decision  struct{ By, Via string }
		Policy    struct{ Verdict, TierName string } `json:"policy"`
		Execution struct{ State string }
	}
	_, body := call(http.MethodGet, "/v1/requests/"+allowed.Key, "", auth)
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Decision.By != "policy:small" || v.Decision.Via != "policy" || v.Policy.Verdict != "allow" {
		t.Errorf("allowed request = %s", body)
	}
	if got := getView(t, p.base, asked.Key); got.Status != "pending" {
		t.Errorf("asked request is %s, want pending", got.Status)
	}
	if n := len(provider.AllObjects()); n != 1 {
		t.Errorf("the provider holds %d objects, want 1 (the allowed write)", n)
	}
	if n := fake.Count("chat.postMessage"); n != 1 {
		t.Errorf("%d cards were posted, want 1 (the asked intent's)", n)
	}
}

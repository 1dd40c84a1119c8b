package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/store/storetest"
)

// TestAKilledReplicasCallbackResumesOnAnother: two replicas on one
// database; the first holds a callback whose POST the agent stalls. While
// the first lives it renews the claim, so the second leaves the delivery
// alone past a whole lease; once the first is killed with SIGKILL, the
// second delivers within 10 s, under the same delivery id.
func TestAKilledReplicasCallbackResumesOnAnother(t *testing.T) {
	t.Parallel()
	const secret = "fleet-callback-secret-do-not-log"
	endpoint := newAgentEndpoint(t, secret)
	endpoint.setHold(true)
	sum := sha256.Sum256([]byte(smokeToken))
	cfgPath := writeConfig(t, fmt.Sprintf(`
agents:
  - name: fleet-agent
    token_sha256: %s
    callback: {url: %q, secret: "${FLEET_CALLBACK_SECRET}"}
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
callbacks: {timeout: 60s, poll: 50ms, retry_base: 50ms}
`, hex.EncodeToString(sum[:]), endpoint.URL+"/hooks/countersign"))
	env := map[string]string{
		"COUNTERSIGN_CONFIG": cfgPath, "COUNTERSIGN_DISPATCH_SECRET": "fleet-dispatch-secret",
		"COUNTERSIGN_LISTEN": "127.0.0.1:0", "FLEET_CALLBACK_SECRET": secret, "SLACK_BOT_TOKEN": "",
		"COUNTERSIGN_DATABASE_URL": storetest.NewURL(t),
	}
	first := startServeProcess(t, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("first replica:\n%s", first.logs.String())
		}
	})
	created := postIntent(t, first.base,
		`{"run_id":"r-fleet","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1","amount_cents":100,"currency":"USD"}}`)
	if code, body := caller(t, http.DefaultClient, first.base)(http.MethodPost, "/v1/requests/"+created.Key+"/cancel", "",
		map[string]string{"Authorization": "Bearer " + smokeToken}); code != http.StatusOK {
		t.Fatalf("cancel = %d %s", code, body)
	}
	select {
	case <-endpoint.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the callback was never sent")
	}

	second := startServeProcess(t, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("second replica:\n%s", second.logs.String())
		}
	})
	time.Sleep(callback.ClaimLease + 2*time.Second) // past a whole lease: only renewal keeps the second off
	endpoint.mu.Lock()
	attempts := len(endpoint.bodies)
	endpoint.mu.Unlock()
	if attempts != 1 {
		t.Fatalf("the agent saw %d attempts while the first replica held the claim, want 1 (the claim was not renewed)", attempts)
	}

	first.kill(t)
	endpoint.setHold(false)
	killed := time.Now()
	endpoint.waitFor(t, "the delivery from the second replica", func(e *agentEndpoint) bool { return len(e.bodies) >= 2 })
	took := time.Since(killed)
	t.Logf("the second replica delivered %v after the SIGKILL", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the second replica delivered %v after the kill, want within 10 s", took)
	}
	endpoint.mu.Lock()
	defer endpoint.mu.Unlock()
	if len(endpoint.seen) != 1 || endpoint.bad != 0 {
		t.Errorf("deliveries %v, %d badly signed; want one delivery id, every attempt signed", endpoint.seen, endpoint.bad)
	}
}

// TestAKilledReplicasCardResumesOnAnother: two replicas on one database;
// the first claims a card's post, which Slack stalls, and is killed with
// SIGKILL; the second posts the card within 10 s, once.
func TestAKilledReplicasCardResumesOnAnother(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	fake.FailNext("chat.postMessage", bottest.Failure{Stall: true})
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
slack: {channel: C0BILLING}
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
	env := map[string]string{
		"COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_DISPATCH_SECRET": smokeSecret, "COUNTERSIGN_LISTEN": "127.0.0.1:0",
		"COUNTERSIGN_DATABASE_URL": storetest.NewURL(t), "COUNTERSIGN_INBOX": "off",
		"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": quorumSlackSecret, "COUNTERSIGN_SLACK_API_URL": fake.URL() + "/",
	}
	first := startServeProcess(t, env)
	postIntent(t, first.base,
		`{"run_id":"r-fleet-card","step":1,"tool":"billing.credit","effect":{"invoice":"inv_c","amount_cents":100,"currency":"EUR"},"summary":"Credit 1.00 EUR"}`)
	eventually(t, "the first replica's post reaches Slack", func() bool { return fake.Count("chat.postMessage") >= 1 })
	second := startServeProcess(t, env)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("first replica:\n%s\nsecond replica:\n%s", first.logs.String(), second.logs.String())
		}
	})
	if n := fake.Count("chat.postMessage"); n != 1 {
		t.Fatalf("%d posts while the first replica holds the claim, want 1", n)
	}

	first.kill(t)
	killed := time.Now()
	eventually(t, "the second replica posts the card", func() bool { return len(fake.Messages("C0BILLING")) >= 1 })
	took := time.Since(killed)
	t.Logf("the second replica posted the card %v after the SIGKILL", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the card was posted %v after the kill, want within 10 s", took)
	}
	time.Sleep(time.Second)
	if n := len(fake.Messages("C0BILLING")); n != 1 {
		t.Errorf("%d cards in the channel, want 1", n)
	}
}

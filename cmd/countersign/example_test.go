package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// `make run` serves examples/countersign.yml on PostgreSQL without Slack: the
// example must be reviewable end to end in the inbox, whose link serve logs.
func TestExampleConfigIsReviewableWithoutSlack(t *testing.T) {
	t.Parallel()
	provider := providertest.New()
	provider.Secret = []byte("local-dispatch-secret") // as `make run` starts it
	providerSrv := providertest.Start(t, provider)
	example, err := os.ReadFile("../../examples/countersign.yml")
	if err != nil {
		t.Fatal(err)
	}
	// The example dispatches to the fake provider `make run` starts on
	// 127.0.0.1:9090; this test's provider listens elsewhere.
	cfgPath := writeConfig(t, strings.ReplaceAll(string(example), "http://127.0.0.1:9090", providerSrv.URL))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": "local-dispatch-secret",
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}))

	// The example's documented token.
	created := postThenApprove(t, newBrowserClient(), base, logs, "dev-agent-token",
		`{"run_id":"r-example","step":1,"tool":"billing.credit","effect":{"invoice":"inv_example","amount_cents":4200,"currency":"USD"},"summary":"Credit 42.00 USD to inv_example"}`)
	for deadline := time.Now().Add(20 * time.Second); provider.Writes(created.Key) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the approved write never reached the provider:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling the provider's count
	}
	if n := provider.Writes(created.Key); n != 1 {
		t.Fatalf("the provider received %d writes, want 1", n)
	}
}

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// SIGTERM while the provider holds the write that the approval's wake-up
// sent: serve waits for the answer and records it. The tool can be neither
// verified nor resent, so an outcome lost here would be left to a human.
func TestServeFinishesTheSendInFlightOnSIGTERM(t *testing.T) {
	t.Parallel()
	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	provider.Set(providertest.Behavior{Delay: 3 * time.Second})
	providerSrv := providertest.Start(t, provider)
	fake := bottest.New(t)
	dbURL := storetest.NewURL(t)
	env := quorumEnv(t, dbURL, fake, fmt.Sprintf(`  billing.credit:
    approvers: [U1]
    dispatch: {url: "%s/credits", timeout: 10s}
    key_aware: false
`, providerSrv.URL))
	p := startServeProcess(t, env)
	req := postIntent(t, p.base,
		`{"run_id":"r-term","step":1,"tool":"billing.credit","effect":{"invoice":"inv_t","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR"}`)
	approved := time.Now()
	if code := clickAt(t, p.base, "U1", "approve", req); code != 200 {
		t.Fatalf("click answered %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for provider.Received() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the provider never received the write:\n%s", p.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.stop(t)
	if took := time.Since(approved); took < 3*time.Second {
		t.Errorf("serve exited %v after the approval, before the provider answered:\n%s", took, p.logs.String())
	}
	db, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var state string
	if err := db.QueryRow(context.Background(), `SELECT state FROM executions`).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if state != "succeeded" {
		t.Errorf("execution is %s, want succeeded:\n%s", state, p.logs.String())
	}
	if got := provider.Received(); got != 1 {
		t.Errorf("the provider received %d writes, want 1", got)
	}
}

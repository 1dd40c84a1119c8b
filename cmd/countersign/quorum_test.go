package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// stop ends the process with SIGTERM, as an operator's restart does, and
// waits for it.
func (p *serveProcess) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("serve did not stop on SIGTERM:\n%s", p.logs.String())
	}
}

// quorumEnv is serve's environment for a quorum test: PostgreSQL at dbURL,
// the fake Slack, and a configuration file holding tools.
func quorumEnv(t testing.TB, dbURL string, fake *bottest.Slack, tools string) map[string]string {
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
slack: {channel: C0BILLING}
executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
%s`, hex.EncodeToString(sum[:]), tools))
	return map[string]string{
		"COUNTERSIGN_DATABASE_URL": dbURL, "COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": quorumSlackSecret,
		"COUNTERSIGN_SLACK_API_URL": fake.URL() + "/", "COUNTERSIGN_INBOX": "off", "COUNTERSIGN_LISTEN": "127.0.0.1:0",
	}
}

const quorumSlackSecret = "quorum-signing-secret"

// clickAt presses a card button as user on the serve at base.
func clickAt(t *testing.T, base, user, action string, req postedRequest) int {
	value, _ := json.Marshal(map[string]any{"r": req.ID, "n": 1, "h": req.PayloadHash})
	body := bottest.ClickForm(bottest.ClickPayload(user, "C0BILLING", action, string(value)))
	hr, _ := http.NewRequest(http.MethodPost, base+"/slack/interactions", strings.NewReader(string(body)))
	hr.Header = bottest.Sign(quorumSlackSecret, time.Now(), body)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Error(err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func postIntent(t *testing.T, base, intent string) postedRequest {
	t.Helper()
	return createdRequest(t)(caller(t, http.DefaultClient, base)(http.MethodPost, "/v1/requests", intent,
		map[string]string{"Authorization": "Bearer " + smokeToken}))
}

// createdRequest reads the request a POST /v1/requests answered 201 with, and
// fails the test on any other answer.
func createdRequest(t *testing.T) func(code int, body []byte) postedRequest {
	return func(code int, body []byte) postedRequest {
		t.Helper()
		if code != http.StatusCreated {
			t.Fatalf("POST = %d %s", code, body)
		}
		var r postedRequest
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// quorumView is the part of the representation the quorum tests read.
type quorumView struct {
	Status string `json:"status"`
	Policy struct {
		Approvals int      `json:"approvals"`
		Approvers []string `json:"approvers"`
		Tier      *int     `json:"tier"`
	} `json:"policy"`
	Votes []struct {
		By, Verdict string
	} `json:"votes"`
	Execution *struct {
		State string `json:"state"`
		Code  string `json:"code"`
	} `json:"execution"`
	Receipt string `json:"receipt"`
}

func getView(t *testing.T, base, ref string) quorumView {
	t.Helper()
	code, body := caller(t, http.DefaultClient, base)(http.MethodGet, "/v1/requests/"+ref, "",
		map[string]string{"Authorization": "Bearer " + smokeToken})
	var v quorumView
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		t.Fatalf("GET = %d %s", code, body)
	}
	return v
}

// Eight reviewers approve a 3-of-N request at once, their clicks spread over
// two serve processes on one PostgreSQL: exactly one decision, three votes,
// one execution, and one write at the provider.
func TestQuorumAcrossTwoServeProcesses(t *testing.T) {
	t.Parallel()
	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	providerSrv := providertest.Start(t, provider)
	fake := bottest.New(t)
	dbURL := storetest.NewURL(t)
	env := quorumEnv(t, dbURL, fake, fmt.Sprintf(`  billing.credit:
    approvers: [U1, U2, U3, U4, U5, U6, U7, U8]
    approvals: 3
    dispatch: {url: "%s/credits"}
    key_aware: true
`, providerSrv.URL))
	replicas := []*serveProcess{startServeProcess(t, env), startServeProcess(t, env)}
	req := postIntent(t, replicas[0].base,
		`{"run_id":"r-q","step":1,"tool":"billing.credit","effect":{"invoice":"inv_q","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR"}`)

	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if code := clickAt(t, replicas[i%2].base, fmt.Sprintf("U%d", i+1), "approve", req); code != http.StatusOK {
				t.Errorf("click %d answered %d", i, code)
			}
		}()
	}
	close(start)
	wg.Wait()

	deadline := time.Now().Add(60 * time.Second)
	for {
		v := getView(t, replicas[1].base, req.Key)
		if v.Execution != nil && v.Execution.State == "succeeded" {
			if v.Status != "approved" || len(v.Votes) != 3 || v.Policy.Approvals != 3 {
				t.Fatalf("view = %+v", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the write never succeeded: %+v", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
	db, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	for query, want := range map[string]int{
		`SELECT count(*) FROM decisions`:                     1,
		`SELECT count(*) FROM votes`:                         3,
		`SELECT count(*) FROM executions`:                    1,
		`SELECT count(*) FROM events WHERE kind = 'voted'`:   3,
		`SELECT count(*) FROM events WHERE kind = 'decided'`: 1,
		`SELECT count(*) FROM events WHERE kind = 'claimed'`: 1,
	} {
		var n int
		if err := db.QueryRow(context.Background(), query).Scan(&n); err != nil || n != want {
			t.Errorf("%s = %d (%v), want %d", query, n, err, want)
		}
	}
	if got := provider.Received(); got != 1 {
		t.Errorf("the provider received %d writes, want 1", got)
	}
}

// A request keeps the policy it was given at intake: after serve restarts
// with a configuration that drops the tier and needs one approval, the
// pending request still needs its tier's two.
func TestPolicyIsFrozenAcrossARestartWithANewConfig(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	dbURL := storetest.NewURL(t)
	tool := func(approvals, tiers string) string {
		return fmt.Sprintf(`  billing.credit:
    approvers: [U1, U2, U3]
    approvals: %s
%s    dispatch: {url: "http://127.0.0.1:9/credits"}
`, approvals, tiers)
	}
	before := startServeProcess(t, quorumEnv(t, dbURL, fake, tool("1", `    tiers:
      - when: {field: amount_cents, gt: 100000}
        approvals: 2
`)))
	over := postIntent(t, before.base, `{"run_id":"r-f","step":1,"tool":"billing.credit","effect":{"amount_cents":100001},"summary":"big"}`)
	at := postIntent(t, before.base, `{"run_id":"r-f","step":2,"tool":"billing.credit","effect":{"amount_cents":100000},"summary":"boundary"}`)
	if v := getView(t, before.base, over.Key); v.Policy.Approvals != 2 || v.Policy.Tier == nil || *v.Policy.Tier != 0 {
		t.Fatalf("policy past the boundary = %+v", v.Policy)
	}
	if v := getView(t, before.base, at.Key); v.Policy.Approvals != 1 || v.Policy.Tier != nil {
		t.Fatalf("policy at the boundary = %+v", v.Policy)
	}
	before.stop(t)

	after := startServeProcess(t, quorumEnv(t, dbURL, fake, tool("1", "")))
	clickAt(t, after.base, "U1", "approve", over)
	if v := getView(t, after.base, over.Key); v.Status != "pending" || len(v.Votes) != 1 || v.Policy.Approvals != 2 {
		t.Fatalf("after one approval under the new config: %+v", v)
	}
	clickAt(t, after.base, "U2", "approve", over)
	if v := getView(t, after.base, over.Key); v.Status != "approved" {
		t.Fatalf("after the second approval: %+v", v)
	}
}

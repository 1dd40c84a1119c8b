package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// recheckServe is serve on PostgreSQL with billing.credit under a policy
// (a line of its configuration: "approvals: 2", "deny: …"), whose
// precondition call the provider holds until released: an approved write
// waits there, claimed and not sent.
type recheckServe struct {
	*serveProcess
	provider *providertest.Provider
	dbURL    string
	cfgPath  string
	tool     func(policy string) string
	fake     *bottest.Slack
}

func startRecheckServe(t *testing.T, policy string) *recheckServe {
	t.Helper()
	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	srv := providertest.Start(t, provider)
	provider.HangPrecondition(true)
	s := &recheckServe{provider: provider, dbURL: storetest.NewURL(t), fake: bottest.New(t)}
	// The dispatch timeout bounds the precondition call too: long enough
	// for the reload to land while the call is held.
	s.tool = func(policy string) string {
		return fmt.Sprintf(`  billing.credit:
    approvers: [U1, U2, U3]
    %s
    dispatch: {url: "%s/credits", timeout: 60s}
    precondition: {url: "%s/precondition"}
    key_aware: true
`, policy, srv.URL, srv.URL)
	}
	env := quorumEnv(t, s.dbURL, s.fake, s.tool(policy))
	s.cfgPath = env["COUNTERSIGN_CONFIG"]
	s.serveProcess = startServeProcess(t, env)
	return s
}

// approveAndHold posts an intent, approves it with a click by each of
// voters, and waits until its dispatch is held in the precondition call.
func (s *recheckServe) approveAndHold(t *testing.T, voters ...string) postedRequest {
	t.Helper()
	req := postIntent(t, s.base,
		`{"run_id":"r-recheck","step":1,"tool":"billing.credit","effect":{"invoice":"inv_r","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR"}`)
	for _, v := range voters {
		if code := clickAt(t, s.base, v, "approve", req); code != http.StatusOK {
			t.Fatalf("%s's click answered %d", v, code)
		}
	}
	eventually(t, "the approved write's dispatch to be held in its precondition call", func() bool {
		return s.provider.PreconditionChecks() == 1
	})
	return req
}

// reload rewrites the configuration file with the tool under policy,
// signals serve, and waits until it says the configuration is reloaded.
func (s *recheckServe) reload(t *testing.T, policy string) {
	t.Helper()
	next, err := os.ReadFile(quorumEnv(t, s.dbURL, s.fake, s.tool(policy))["COUNTERSIGN_CONFIG"])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.cfgPath, next, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, "serve to reload its configuration", func() bool {
		return strings.Contains(s.logs.String(), `"msg":"configuration reloaded"`)
	})
}

// A configuration that asks more approvals, reloaded by SIGHUP while an
// approved write's dispatch is held: the provider sees no write, the request
// waits in round 2 for the two approvals the policy in force asks, and the
// audit names the version it was approved under and the version in force.
func TestSIGHUPToAStricterPolicyStopsAHeldWrite(t *testing.T) {
	t.Parallel()
	s := startRecheckServe(t, "approvals: 1")
	req := s.approveAndHold(t, "U1")
	s.reload(t, "approvals: 2")
	s.provider.Release()

	eventually(t, "the request to go back to review", func() bool {
		v := getView(t, s.base, req.Key)
		return v.Status == "pending" && v.Policy.Approvals == 2
	})
	if n := s.provider.Received(); n != 0 {
		t.Fatalf("the provider received %d writes, want none", n)
	}
	db, err := pgx.Connect(context.Background(), s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	var (
		round                       int
		frozen, was, now, code      string
		executionState, decidedWith string
	)
	if err := db.QueryRow(context.Background(), `SELECT round, policy->>'version' FROM requests WHERE id = $1`, req.ID).Scan(&round, &frozen); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(context.Background(), `SELECT data->>'policy_version', data->>'new_policy_version', data->>'code'
FROM events WHERE request_id = $1 AND kind = 'superseded'`, req.ID).Scan(&was, &now, &code); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(context.Background(), `SELECT e.state, d.decided_by FROM executions e JOIN decisions d ON d.id = e.decision_id
WHERE e.request_id = $1`, req.ID).Scan(&executionState, &decidedWith); err != nil {
		t.Fatal(err)
	}
	if round != 2 || now != frozen || was == now || was == "" || code != "policy_stricter" || executionState != "superseded" || decidedWith != "U1" {
		t.Errorf("round %d frozen %q; superseded from %q to %q (%s); execution %s approved by %s",
			round, frozen, was, now, code, executionState, decidedWith)
	}
}

// A looser configuration reloaded the same way lets the approved write go,
// once.
func TestSIGHUPToALooserPolicyLetsAHeldWriteGo(t *testing.T) {
	t.Parallel()
	s := startRecheckServe(t, "approvals: 2")
	req := s.approveAndHold(t, "U1", "U2")
	s.reload(t, "approvals: 1")
	s.provider.Release()

	eventually(t, "the write to succeed", func() bool {
		v := getView(t, s.base, req.Key)
		return v.Execution != nil && v.Execution.State == "succeeded"
	})
	if n := s.provider.Received(); n != 1 {
		t.Errorf("the provider received %d writes, want 1", n)
	}
	if v := getView(t, s.base, req.Key); v.Status != "approved" || v.Policy.Approvals != 2 {
		t.Errorf("view = %+v; want approved under its frozen policy of 2", v)
	}
}

// A configuration that denies, reloaded while an approved write's dispatch
// is held: the provider sees no write, the request is rejected by the rule
// in a new round, and a post of the same intent is answered 403
// denied_by_policy.
func TestSIGHUPToADenyingPolicyStopsAHeldWrite(t *testing.T) {
	t.Parallel()
	s := startRecheckServe(t, "approvals: 1")
	req := s.approveAndHold(t, "U1")
	s.reload(t, `deny: "Credits are paused during the audit."`)
	s.provider.Release()

	eventually(t, "the request to be denied", func() bool { return getView(t, s.base, req.Key).Status == "rejected" })
	if n := s.provider.Received(); n != 0 {
		t.Fatalf("the provider received %d writes, want none", n)
	}
	code, body := caller(t, http.DefaultClient, s.base)(http.MethodPost, "/v1/requests",
		`{"run_id":"r-recheck","step":1,"tool":"billing.credit","effect":{"invoice":"inv_r","amount_cents":700,"currency":"EUR"}}`,
		map[string]string{"Authorization": "Bearer " + smokeToken})
	if code != http.StatusForbidden || !strings.Contains(string(body), `"code":"denied_by_policy"`) ||
		!strings.Contains(string(body), "Credits are paused during the audit.") {
		t.Errorf("a replay of the denied intent = %d %s", code, body)
	}
}

// A write approved for its agent to perform, whose tool a reload turns into
// a dispatched one: serve's executor now claims it, sends nothing, and
// leaves it for a person (needs_review, execute_changed), for the agent may
// have performed it with its receipt already.
func TestSIGHUPFromAgentExecutedToDispatchedSendsNothing(t *testing.T) {
	t.Parallel()
	provider := providertest.New()
	provider.Secret = []byte(smokeSecret)
	srv := providertest.Start(t, provider)
	s := &recheckServe{provider: provider, dbURL: storetest.NewURL(t), fake: bottest.New(t)}
	s.tool = func(execute string) string {
		if execute == "agent" {
			return "  billing.credit:\n    approvers: [U1]\n    execute: agent\n"
		}
		return fmt.Sprintf("  billing.credit:\n    approvers: [U1]\n    dispatch: {url: %q}\n", srv.URL+"/credits")
	}
	env := quorumEnv(t, s.dbURL, s.fake, s.tool("agent"))
	env["COUNTERSIGN_RECEIPT_KEY"] = testReceiptKeyPEM(t)
	s.cfgPath = env["COUNTERSIGN_CONFIG"]
	s.serveProcess = startServeProcess(t, env)

	req := postIntent(t, s.base,
		`{"run_id":"r-execute","step":1,"tool":"billing.credit","effect":{"invoice":"inv_x","amount_cents":700,"currency":"EUR"}}`)
	if code := clickAt(t, s.base, "U1", "approve", req); code != http.StatusOK {
		t.Fatalf("the click answered %d", code)
	}
	if v := getView(t, s.base, req.Key); v.Status != "approved" || v.Receipt == "" {
		t.Fatalf("after the approval: %+v; want approved with a receipt", v)
	}
	s.reload(t, "dispatch")
	eventually(t, "the write to need review", func() bool {
		v := getView(t, s.base, req.Key)
		return v.Execution != nil && v.Execution.State == "needs_review"
	})
	v := getView(t, s.base, req.Key)
	if v.Execution.Code != "execute_changed" || v.Receipt == "" {
		t.Errorf("execution %+v, receipt %q; want execute_changed, the receipt still given", v.Execution, v.Receipt)
	}
	if n := s.provider.Received(); n != 0 {
		t.Errorf("the provider received %d writes, want none", n)
	}
}

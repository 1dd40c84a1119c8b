package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/config"
)

// decideLocally runs `countersign approve|reject args…` as a process of the
// test would, against the data directory dir, and returns its exit code,
// standard output and standard error.
func decideLocally(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, envFrom(env), nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The use an agent's integration test makes of a local run: serve runs,
// the agent posts, the test approves and rejects from code, and the agent
// sees the decision, the write and the reason.
func TestApproveAndRejectFromTheCommandLineWhileServeRuns(t *testing.T) {
	t.Parallel()
	p, dir := startLocalRun(t)
	info, err := os.Stat(filepath.Join(dir, localReviewSocket))
	if err != nil || info.Mode()&os.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Fatalf("the socket in the data directory: %v, %v", info, err)
	}
	post, get := localRunAgent(t, p, dir, "run-cli")
	env := map[string]string{"COUNTERSIGN_DATA_DIR": dir}

	// Approved by a short prefix of its key, then executed once.
	approved := post(1)
	code, out, errs := decideLocally(t, env, "approve", approved.Key[:12])
	if code != 0 || !strings.HasPrefix(out, "approved "+approved.ID) || !strings.Contains(out, config.DefaultInboxReviewer) {
		t.Fatalf("approve = %d, %q, %q", code, out, errs)
	}
	type view struct {
		Status   string `json:"status"`
		Decision *struct {
			Via    string `json:"via"`
			By     string `json:"by"`
			Reason string `json:"reason"`
			Retry  string `json:"retry"`
		} `json:"decision"`
		Execution *struct {
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
		} `json:"execution"`
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, body := get("/v1/requests/" + approved.Key + "?wait=5s")
		var v view
		if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
			t.Fatalf("GET = %d %s", code, body)
		}
		if v.Execution != nil && v.Execution.State == "succeeded" {
			if v.Status != "approved" || v.Decision == nil || v.Decision.Via != localReviewVia ||
				v.Decision.By != config.DefaultInboxReviewer || v.Execution.Attempts != 1 {
				t.Fatalf("view = %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never executed: %s\n%s", body, p.logs.String())
		}
	}

	// A second approval changes nothing and says so, with the refusal's code.
	code, out, errs = decideLocally(t, env, "approve", approved.ID)
	if code != 1 || out != "" || !strings.Contains(errs, "already_decided: ") {
		t.Fatalf("second approve = %d, %q, %q", code, out, errs)
	}

	// Rejected by its full key, the reason after it, told to the agent.
	rejected := post(2)
	code, out, errs = decideLocally(t, env, "reject", rejected.Key, "--reason", "refunds over 10 EUR need a ticket")
	if code != 0 || !strings.HasPrefix(out, "rejected "+rejected.ID) || !strings.Contains(out, "need a ticket") {
		t.Fatalf("reject = %d, %q, %q", code, out, errs)
	}
	code, body := get("/v1/requests/" + rejected.Key)
	var v view
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Status != "rejected" || v.Decision == nil ||
		v.Decision.Reason != "refunds over 10 EUR need a ticket" || v.Decision.Via != localReviewVia {
		t.Fatalf("the rejected request = %d %s", code, body)
	}

	// A reference that names nothing, and one that is a business id, not a key.
	for _, ref := range []string{"wa_ffffffffffff", "ord_1001"} {
		if code, out, errs := decideLocally(t, env, "approve", ref); code != 1 || out != "" || !strings.Contains(errs, "not_found: ") {
			t.Errorf("approve %s = %d, %q, %q", ref, code, out, errs)
		}
	}
	// Someone the configuration does not name as a local reviewer.
	if code, _, errs := decideLocally(t, env, "approve", "--as", "local:mallory", rejected.ID); code != 1 || !strings.Contains(errs, "not_approver") {
		t.Errorf("approve as local:mallory = %d, %q", code, errs)
	}
}

// Without serve the command says so and records nothing.
func TestApproveWithoutServeSaysSo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := decideLocally(t, map[string]string{"COUNTERSIGN_DATA_DIR": dir}, "approve", "wa_0123456789ab")
	if code != 1 || out != "" || !strings.Contains(errs, "no serve answers on "+filepath.Join(dir, localReviewSocket)) {
		t.Fatalf("approve = %d, %q, %q", code, out, errs)
	}
}

// A deployment whose tools name no local: reviewer is never decided from
// here, on PostgreSQL or not; one that names one is.
func TestApproveRefusesAConfigurationWithoutLocalReviewers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slackOnly := smokeConfig(t) // billing.credit, approved by U0ANA in Slack
	code, out, errs := decideLocally(t, map[string]string{
		"COUNTERSIGN_DATA_DIR":     dir,
		"COUNTERSIGN_CONFIG":       slackOnly,
		"COUNTERSIGN_DATABASE_URL": "postgres://countersign@127.0.0.1:5432/countersign",
	}, "approve", "wa_0123456789ab")
	if code != 1 || out != "" || !strings.Contains(errs, "COUNTERSIGN_DATABASE_URL points at PostgreSQL and the configuration names no local: reviewer") {
		t.Fatalf("approve on PostgreSQL = %d, %q, %q", code, out, errs)
	}
	code, _, errs = decideLocally(t, map[string]string{"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_CONFIG": slackOnly},
		"reject", "--reason", "no", "wa_0123456789ab")
	if code != 1 || !strings.Contains(errs, "no tool of the configuration names a local: reviewer") {
		t.Fatalf("reject with Slack approvers only = %d, %q", code, errs)
	}

	// With a local reviewer named, the command goes on to look for serve,
	// deciding as the one local reviewer there is.
	withLocal := writeConfig(t, `
agents: [{name: a, token_sha256: 0000000000000000000000000000000000000000000000000000000000000000}]
tools:
  billing.credit:
    approvers: [U0ANA, "local:ci"]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`)
	code, _, errs = decideLocally(t, map[string]string{
		"COUNTERSIGN_DATA_DIR":     dir,
		"COUNTERSIGN_CONFIG":       withLocal,
		"COUNTERSIGN_DATABASE_URL": "postgres://countersign@127.0.0.1:5432/countersign",
	}, "approve", "wa_0123456789ab")
	if code != 1 || !strings.Contains(errs, "no serve answers on") {
		t.Fatalf("approve with a local reviewer on PostgreSQL = %d, %q", code, errs)
	}
}

func TestLocalReviewArgs(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	opts, code, ok := parseLocalReviewArgs("reject", []string{"--as", "local:ci", "wa_0123456789ab", "--reason", "why not"}, &stdout, &stderr)
	if !ok || code != 0 || opts.ref != "wa_0123456789ab" || opts.reason != "why not" || opts.as != "local:ci" {
		t.Fatalf("parsed %+v, %d, %v", opts, code, ok)
	}
	if _, code, ok := parseLocalReviewArgs("approve", []string{"--reason", "x", "wa_0123456789ab"}, &stdout, &stderr); ok || code != 2 {
		t.Errorf("approve --reason = %d, %v; want a usage error", code, ok)
	}
	if _, code, ok := parseLocalReviewArgs("approve", nil, &stdout, &stderr); ok || code != 2 {
		t.Errorf("approve without REF = %d, %v; want a usage error", code, ok)
	}
	if _, code, ok := parseLocalReviewArgs("approve", []string{"a", "b"}, &stdout, &stderr); ok || code != 2 {
		t.Errorf("approve a b = %d, %v; want a usage error", code, ok)
	}
}

// A data directory too long for a socket's path leaves serve running,
// without local reviews, saying so.
func TestServeRunsWithoutLocalReviewsWhenTheSocketCannotBeMade(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 110))
	base, logs := startServeWith(t, envFrom(map[string]string{"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_LISTEN": "127.0.0.1:0"}))
	waitFor(t, logs, "local reviews are off")
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz = %d", resp.StatusCode)
	}
	if code, _, errs := decideLocally(t, map[string]string{"COUNTERSIGN_DATA_DIR": dir}, "approve", "wa_0123456789ab"); code != 1 || !strings.Contains(errs, "no serve answers on") {
		t.Fatalf("approve = %d, %q", code, errs)
	}
}

// A tool that needs two local reviewers: the first approval is counted,
// the same reviewer's second changes nothing, the other's decides.
func TestApproveCountsTowardsAQuorumOfLocalReviewers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
agents: [{name: ci-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: ["local:ana", "local:ben"]
    approvals: 2
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, tokenHashOf(smokeToken)))
	env := map[string]string{"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_CONFIG": cfg}
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATA_DIR": dir, "COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_LISTEN": "127.0.0.1:0",
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
	}))
	waitFor(t, logs, "local reviews listening")
	call := caller(t, &http.Client{Timeout: 30 * time.Second}, base)
	created := createdRequest(t)(call(http.MethodPost, "/v1/requests",
		`{"run_id": "run-q", "step": 1, "tool": "billing.credit", "effect": {"invoice": "inv_1", "amount_cents": 100}}`,
		map[string]string{"Authorization": "Bearer " + smokeToken}))
	for _, step := range []struct{ as, want string }{
		{"local:ana", "local:ana approved " + created.ID},
		{"local:ana", "local:ana had already voted on " + created.ID},
		{"local:ben", "approved " + created.ID},
	} {
		code, out, errs := decideLocally(t, env, "approve", "--as", step.as, created.ID)
		if code != 0 || !strings.HasPrefix(out, step.want) {
			t.Fatalf("approve as %s = %d, %q, %q; want %q", step.as, code, out, errs, step.want)
		}
	}
	code, body := call(http.MethodGet, "/v1/requests/"+created.Key, "", map[string]string{"Authorization": "Bearer " + smokeToken})
	if code != http.StatusOK || !strings.Contains(string(body), `"status":"approved"`) || !strings.Contains(string(body), `"by":"local:ben"`) {
		t.Fatalf("the request = %d %s", code, body)
	}
}

// startLocalRun starts serve as a local run does (the embedded store in a
// data directory of its own, no configuration) and waits for its local
// reviews' socket.
func startLocalRun(t *testing.T) (*serveProcess, string) {
	t.Helper()
	dir := t.TempDir()
	p := startServeProcess(t, map[string]string{
		"COUNTERSIGN_DATA_DIR":     dir,
		"COUNTERSIGN_LISTEN":       "127.0.0.1:0",
		"COUNTERSIGN_DATABASE_URL": "",
		"COUNTERSIGN_CONFIG":       "",
	})
	waitFor(t, p.logs, "local reviews listening")
	return p, dir
}

// localRunAgent is the local agent of a local run (serve on the embedded
// store in dir), with its token: post sends a demo.refund intent in run
// (step numbers it), get reads a path.
func localRunAgent(t *testing.T, p *serveProcess, dir, run string) (post func(step int) postedRequest, get func(path string) (int, []byte)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, localTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	agent := map[string]string{"Authorization": "Bearer " + strings.TrimSpace(string(raw))}
	call := caller(t, &http.Client{Timeout: 30 * time.Second}, p.base)
	get = func(path string) (int, []byte) { return call(http.MethodGet, path, "", agent) }
	post = func(step int) postedRequest {
		t.Helper()
		return createdRequest(t)(call(http.MethodPost, "/v1/requests", fmt.Sprintf(
			`{"run_id": %q, "step": %d, "tool": "demo.refund", "effect": {"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}}`, run, step), agent))
	}
	return post, get
}

package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/config"
)

// An agent's old and new tokens both reach the API while both hashes are
// configured, each counted under its hash's first 8 hex digits (so an
// operator sees the old one fall out of use); once the old hash is removed
// (and serve restarted), the old token is refused and the new one still
// works.
func TestAgentTokenOverlapThroughServe(t *testing.T) {
	t.Parallel()
	status := func(a *app, token string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		a.mux.ServeHTTP(rec, req)
		return rec.Code
	}
	overlap := testApp(t, &config.Config{File: config.FileConfig{Agents: []config.AgentConfig{
		{Name: "billing-agent", TokenSHA256: config.StringOrList{tokenHashOf("billing-old"), tokenHashOf("billing-new")}},
	}}}, nil)
	for _, token := range []string{"billing-old", "billing-new"} {
		if code := status(overlap, token); code != http.StatusOK {
			t.Errorf("during the overlap, %s: status %d, want 200", token, code)
		}
	}
	if code := status(overlap, "billing-older"); code != http.StatusUnauthorized {
		t.Errorf("a token in no list: status %d, want 401", code)
	}
	status(overlap, "billing-new")
	for token, want := range map[string]float64{"billing-old": 1, "billing-new": 2} {
		uses := overlap.hookMetrics.TokenUses.WithLabelValues("billing-agent", tokenHashOf(token)[:8])
		if got := testutil.ToFloat64(uses); got != want {
			t.Errorf("countersign_agent_token_requests_total for %s = %v, want %v", token, got, want)
		}
	}

	after := testApp(t, &config.Config{File: config.FileConfig{Agents: []config.AgentConfig{
		{Name: "billing-agent", TokenSHA256: config.StringOrList{tokenHashOf("billing-new")}},
	}}}, nil)
	if code := status(after, "billing-old"); code != http.StatusUnauthorized {
		t.Errorf("the removed token: status %d, want 401", code)
	}
	if code := status(after, "billing-new"); code != http.StatusOK {
		t.Errorf("the new token after the overlap: status %d, want 200", code)
	}
}

// serve verifies Slack's requests with each value of SLACK_SIGNING_SECRET:
// a command signed with either is answered, one signed with neither is
// refused.
func TestSlackSigningSecretsThroughServe(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	a := testApp(t, &config.Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "slack-old,slack-new", SlackAPIURL: fake.URL()}, nil)
	body := bottest.CommandForm("USUP", "C0BILLING", "help")
	for signer, want := range map[string]int{"slack-old": http.StatusOK, "slack-new": http.StatusOK, "slack-other": http.StatusUnauthorized} {
		req := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(string(body)))
		req.Header = bottest.Sign(signer, time.Now(), body)
		rec := httptest.NewRecorder()
		a.mux.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("a command signed with %s: status %d, want %d", signer, rec.Code, want)
		}
	}
}

// config check prints a rotation's lists as lists, every value redacted,
// and says how many secrets each environment variable holds, not which.
func TestConfigCheckShowsARotationRedacted(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
slack: {channel: C0APPROVALS}
agents:
  - name: billing-agent
    token_sha256: [`+tokenHashOf("billing-old")+`, `+tokenHashOf("billing-new")+`]
    callback: {url: "https://agent.internal/cb", secret: [cb-s3cret-old, cb-s3cret-new]}
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {url: "http://127.0.0.1:9/credits", secret: billing-s3cret}
`)
	env := envFrom(map[string]string{"COUNTERSIGN_DISPATCH_SECRET": "shared-s3cret-old,shared-s3cret-new", "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
		"COUNTERSIGN_DATABASE_URL": "postgres://127.0.0.1:5432/countersign", "SLACK_BOT_TOKEN": "xoxb-1",
		"SLACK_SIGNING_SECRET": "slack-s3cret"})
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", path}, env, nil, &out, &errOut); code != 0 {
		t.Fatalf("config check exited %d: %s", code, errOut.String())
	}
	printed := out.String()
	if strings.Contains(printed, "s3cret") {
		t.Errorf("config check printed a secret:\n%s", printed)
	}
	for _, want := range []string{
		"COUNTERSIGN_DISPATCH_SECRET set (2 values)", "SLACK_SIGNING_SECRET set;",
		"secret: '[redacted]'", // the tool's one
		"- " + tokenHashOf("billing-old") + "\n", "- " + tokenHashOf("billing-new") + "\n",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("config check did not print %q:\n%s", want, printed)
		}
	}
	if n := strings.Count(printed, "- '[redacted]'"); n != 2 {
		t.Errorf("config check printed %d redacted list values, want the callback's 2:\n%s", n, printed)
	}
}

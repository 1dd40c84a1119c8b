package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/storetest"
)

// testApp builds serve's components with newApp, on a fresh database, for
// cfg with one agent and one tool unless cfg names its own; it stops what the test started, and closes the store,
// when the test ends.
func testApp(t *testing.T, cfg *config.Config, logger *slog.Logger) *app {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sum := sha256.Sum256([]byte(smokeToken))
	cfg.DatabaseURL = storetest.NewURL(t)
	cfg.ConfigPath = "countersign.yaml" // not the local run
	cfg.DispatchSecret = smokeSecret
	cfg.InboxSetting = "off"
	cfg.InboxReviewer = config.DefaultInboxReviewer
	cfg.Listen = "127.0.0.1:0" // as below
	if cfg.File.Agents == nil {
		cfg.File.Agents = []config.AgentConfig{{Name: "smoke-agent", TokenSHA256: config.StringOrList{hex.EncodeToString(sum[:])}}}
	}
	if cfg.File.Tools == nil {
		cfg.File.Tools = map[string]config.ToolConfig{"billing.credit": {
			Channel: "C0BILLING", Approvers: []string{"UANA"}, Dispatch: config.DispatchConfig{URL: "http://127.0.0.1:9/credits"},
		}}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	a, err := newApp(context.Background(), cfg, logger, ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.started == 0 {
			a.db.Close()
		}
		a.stop(time.Now())
	})
	return a
}

// hasPart reports whether a runs a component called name.
func (a *app) hasPart(name string) bool {
	for _, p := range a.parts {
		if p.name == name {
			return true
		}
	}
	return false
}

// hasSweep reports whether a's scheduler runs a sweep called name.
func (a *app) hasSweep(name string) bool {
	return slices.Contains(a.sched.names, name)
}

func TestStartBotWithoutTokenMountsNothing(t *testing.T) {
	t.Parallel()
	a := testApp(t, &config.Config{}, nil)
	rec := httptest.NewRecorder()
	a.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader("")))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", rec.Code)
	}
	if a.review.Groups != nil || a.hasPart("bot") || a.hasSweep("card convergence") {
		t.Fatal("the bot started without a token")
	}
}

// With a token the routes are signed, group resolution is set, and the outbox
// worker posts cards to the Slack API at COUNTERSIGN_SLACK_API_URL.
func TestStartBotDeliversThroughTheConfiguredAPI(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	a := testApp(t, &config.Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fake.URL()}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if a.review.Groups == nil {
		t.Fatal("user groups are not resolved")
	}
	for _, path := range []string{"/slack/interactions", "/slack/commands"} {
		rec := httptest.NewRecorder()
		a.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader("payload=%7B%7D")))
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("unsigned %s: status %d, want 401", path, rec.Code)
		}
	}
	body := bottest.CommandForm("USUP", "C0BILLING", "help")
	req := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(string(body)))
	req.Header = bottest.Sign("s3cret", time.Now(), body)
	rec := httptest.NewRecorder()
	a.mux.ServeHTTP(rec, req)
	var answer struct{ Text string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &answer) != nil || !strings.Contains(answer.Text, "/countersign pending") {
		t.Fatalf("signed help: %d %s", rec.Code, rec.Body.String())
	}

	if err := a.start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.review.Submit(ctx, "agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"), Tool: "billing.credit",
		Effect: json.RawMessage(`{"invoice":"inv_1"}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(fake.Messages("C0BILLING")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox worker posted no card")
		}
		<-tick.C
	}
}

// serve warns that everyone may look requests up unless slack.lookup_allowed
// is set, and passes the list to the slash command.
func TestStartBotLookupAllowed(t *testing.T) {
	t.Parallel()
	const warning = "slack.lookup_allowed is not set"
	for _, allowed := range [][]string{nil, {"USUP", "C0SUPPORT"}} {
		fake := bottest.New(t)
		cfg := &config.Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fake.URL()}
		cfg.File.Slack.LookupAllowed = allowed
		logs := &syncBuffer{}
		a := testApp(t, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
		if warned := strings.Contains(logs.String(), warning); warned != (allowed == nil) {
			t.Errorf("lookup_allowed %v: warned %v; logs:\n%s", allowed, warned, logs.String())
		}

		body := bottest.CommandForm("UOUTSIDER", "C0BILLING", "pending")
		req := httptest.NewRequest(http.MethodPost, "/slack/commands", strings.NewReader(string(body)))
		req.Header = bottest.Sign("s3cret", time.Now(), body)
		rec := httptest.NewRecorder()
		a.mux.ServeHTTP(rec, req)
		refused := strings.Contains(rec.Body.String(), "You are not allowed to look up requests")
		if rec.Code != http.StatusOK || refused != (allowed != nil) {
			t.Errorf("lookup_allowed %v: /countersign pending by an outsider = %d %s", allowed, rec.Code, rec.Body.String())
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

func testApp(t *testing.T, cfg *Config) *app {
	t.Helper()
	db := storetest.NewDB(t)
	logger := slog.New(slog.DiscardHandler)
	cfg.applyDefaults()
	a := &app{
		cfg: cfg, logger: logger, db: store.NewLedger(db), registry: prometheus.NewRegistry(), mux: http.NewServeMux(),
		cron: cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{logger}), cron.Recover(cronLogger{logger}))),
	}
	a.review = &approvals.Service{DB: store.NewLedger(db), Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Channel: "C0BILLING", Approvers: []string{"UANA"}},
	}, Logger: logger}
	return a
}

func TestStartBotWithoutTokenMountsNothing(t *testing.T) {
	t.Parallel()
	a := testApp(t, &Config{})
	if err := a.startBot(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader("")))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", rec.Code)
	}
	if a.review.Groups != nil || len(a.cron.Entries()) != 0 {
		t.Fatal("the bot started without a token")
	}
}

// With a token the routes are signed, group resolution is set, and the cron
// worker posts cards to the Slack API at COUNTERSIGN_SLACK_API_URL.
func TestStartBotDeliversThroughTheConfiguredAPI(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	a := testApp(t, &Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fake.URL()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.startBot(ctx); err != nil {
		t.Fatal(err)
	}
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

	if _, _, err := a.review.Submit(ctx, "agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"), Tool: "billing.credit",
		Effect: json.RawMessage(`{"invoice":"inv_1"}`)}); err != nil {
		t.Fatal(err)
	}
	a.cron.Start()
	defer func() { <-a.cron.Stop().Done() }()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(fake.Messages("C0BILLING")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the cron worker posted no card")
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
		cfg := &Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fake.URL()}
		cfg.File.Slack.LookupAllowed = allowed
		a := testApp(t, cfg)
		logs := &syncBuffer{}
		a.logger = slog.New(slog.NewJSONHandler(logs, nil))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := a.startBot(ctx); err != nil {
			t.Fatal(err)
		}
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

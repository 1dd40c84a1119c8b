package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// planted is a secret in the query string of every outbound URL below.
const planted = "SUPERSECRET123"

// A secret in a provider's or an agent's URL appears on no surface when the
// call to it fails at the network level: not in an execution's last_error,
// the audit events, the outbox or any other row, the card's thread, a
// lookup answer, a callback row, nor the log. A send, a verify and a
// precondition check each fail against an address nothing listens on (or
// one that resets the connection), and so does a callback.
func TestNoSurfaceShowsASecretFromAFailedCallsURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closed := closedAddr(t)
	withSecret := func(path string) string { return "http://" + closed + path + "?api_key=" + planted }
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	db := drivertest.Postgres.Open(t, true)
	ledger, ok := db.Store.(*store.Ledger)
	if !ok {
		t.Fatalf("the backend's store is a %T, not a ledger", db.Store)
	}
	ledger.SetCallbackAgents("agent")
	const channel = "C0BILLING"
	tools := map[string]executor.Tool{
		// Nothing listens: the send fails before anything is written.
		"billing.send": {Method: "POST", URL: withSecret("/credits"), MaxAttempts: 1},
		// The send resets the connection after it was written, so the
		// outcome is verified, at a URL where nothing listens.
		"billing.verify": {Method: "POST", URL: resettingURL(t) + "/credits?api_key=" + planted,
			Verify: &executor.Endpoint{URL: "http://" + closed + "/credits/{key}?api_key=" + planted}, MaxAttempts: 3, VerifyAfter: time.Millisecond},
		// The precondition cannot be checked.
		"billing.pre": {Method: "POST", URL: withSecret("/credits"), Precondition: &executor.Endpoint{URL: withSecret("/balance")}, MaxAttempts: 3},
	}
	reviewTools := map[string]approvals.Tool{}
	for name, tool := range tools {
		tool.Timeout, tool.ClaimTimeout, tool.ApprovalTTL = 2*time.Second, time.Minute, 24*time.Hour
		tools[name] = tool
		reviewTools[name] = approvals.Tool{Name: name, Channel: channel, Approvers: []string{approver}, MaxAttempts: tool.MaxAttempts}
	}
	review := approvalstest.New(t, approvals.Config{DB: ledger, Tools: reviewTools, Logger: logger})
	exec := executor.New(executor.Config{
		DB: ledger, Tools: tools, Secrets: [][]byte{[]byte(secret)}, Worker: "worker-a", BatchSize: 50, Concurrency: 4,
		Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1, Logger: logger,
	})
	fake := bottest.New(t)
	slackBot := bot.New(bot.Config{
		Slack:  slack.New("xoxb-test", slack.OptionAPIURL(fake.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second})),
		Review: review, Cards: ledger, Lookup: lookup.Service{DB: ledger}, SigningSecrets: []string{"signing-secret"},
		Resolver: exec, Logger: logger, PostInterval: -1,
	})
	t.Cleanup(slackBot.Wait)
	callbacks := callback.New(callback.Config{
		DB: ledger, Render: func(ctx context.Context, cb store.Callback) ([]byte, error) {
			return hook.CallbackBody(ctx, review, cb)
		}, Timeout: 2 * time.Second, RetryBase: time.Minute, Batch: 50, Logger: logger,
		Targets: map[string]callback.Target{"agent": {URL: withSecret("/hooks/countersign"), Secrets: [][]byte{[]byte("callback-secret")}}},
	})

	reqs := map[string]store.Request{}
	for name := range tools {
		req, _, err := review.Submit(ctx, "agent", approvals.Intent{
			RunID: "r-secret", Step: json.RawMessage(`1`), Tool: name, Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200}`),
		})
		if err != nil {
			t.Fatalf("submitting %s: %v", name, err)
		}
		if _, err := review.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: approver, Via: "slack"}); err != nil {
			t.Fatalf("approving %s: %v", name, err)
		}
		reqs[name] = req
	}
	if _, err := exec.DispatchOnce(ctx); err != nil {
		t.Fatalf("dispatching: %v", err)
	}
	reconcileDue(t, exec, 1) // billing.verify's unknown
	if _, err := callbacks.RunOnce(ctx); err != nil {
		t.Fatalf("delivering callbacks: %v", err)
	}
	for i := 0; ; i++ {
		if _, err := slackBot.DeliverOnce(ctx); err != nil {
			t.Fatalf("delivering to Slack: %v", err)
		}
		if n, err := db.QueryInt(`SELECT count(*) FROM outbox WHERE state = 'pending'`); err != nil || n == 0 {
			break
		} else if i == 50 {
			t.Fatalf("%d outbox rows still pending", n)
		}
	}

	// Each failure happened and says why, without the URL.
	wantError := map[string]struct {
		state store.ExecState
		why   string
	}{
		"billing.send":   {store.ExecFailed, "connection refused"},
		"billing.verify": {store.ExecNeedsReview, "the verify URL could not be read: "},
		"billing.pre":    {store.ExecSuperseded, "the precondition check could not be made: "},
	}
	var lookups []string
	for name, want := range wantError {
		e, err := ledger.LatestExecution(ctx, reqs[name].ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != want.state || e.LastError == nil || !strings.Contains(*e.LastError, want.why) {
			t.Errorf("%s: execution %s, last_error %v; want %s saying %q", name, e.State, deref(e.LastError), want.state, want.why)
		}
		lookups = append(lookups, command(t, slackBot, reqs[name].Key))
	}
	if n, err := db.QueryInt(`SELECT count(*) FROM callbacks WHERE last_error LIKE '%connection refused%'`); err != nil || n == 0 {
		t.Errorf("no callback row records the refused delivery (%d, %v)", n, err)
	}
	if !strings.Contains(strings.Join(lookups, "\n"), "connection refused") {
		t.Errorf("the lookups do not show why the send failed:\n%s", strings.Join(lookups, "\n"))
	}

	// Every row of every table, every call to Slack, every lookup answer
	// and every log line.
	tables, err := db.QueryStrings(`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil || len(tables) < 5 {
		t.Fatalf("listing tables: %v %v", tables, err)
	}
	for _, table := range tables {
		n, err := db.QueryInt(fmt.Sprintf(`SELECT count(*) FROM %q t WHERE t::text LIKE '%%%s%%'`, table, planted))
		if err != nil || n != 0 {
			t.Errorf("table %s: %d rows carry the secret (%v)", table, n, err)
		}
	}
	var slackCalls []string
	for _, method := range []string{"chat.postMessage", "chat.update", "chat.postEphemeral"} {
		for _, c := range fake.Calls(method) {
			slackCalls = append(slackCalls, c.Form.Encode()+string(c.Body))
		}
	}
	if joined := strings.Join(slackCalls, "\n"); !strings.Contains(joined, "needs+review") && !strings.Contains(joined, "needs review") {
		t.Errorf("no thread reply says a write needs review; the Slack calls were:\n%s", joined)
	}
	surfaces := map[string]string{
		"Slack calls": strings.Join(slackCalls, "\n"),
		"lookups":     strings.Join(lookups, "\n"),
		"logs":        logs.String(),
	}
	for name, text := range surfaces {
		if text == "" {
			t.Errorf("%s: nothing to look at", name)
		}
		if strings.Contains(text, planted) || strings.Contains(text, "api_key") {
			t.Errorf("%s carry the secret:\n%s", name, text)
		}
	}
}

// command runs "/countersign text" and returns the ephemeral answer.
func command(t *testing.T, b *bot.Bot, text string) string {
	t.Helper()
	body := bottest.CommandForm("U0SUPPORT", "C0BILLING", text)
	req := httptest.NewRequest(http.MethodPost, "/slack/commands", bytes.NewReader(body))
	req.Header = bottest.Sign("signing-secret", time.Now(), body)
	rec := httptest.NewRecorder()
	b.Commands().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("/countersign %s: %d %s", text, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// closedAddr is a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// resettingURL is a server that reads a request whole, then resets the
// connection without answering.
func resettingURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0)
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// lockedBuffer is a log destination several goroutines write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

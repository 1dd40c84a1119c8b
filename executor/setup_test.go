package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

const (
	toolName = "billing.credit"
	approver = "U0APPROVER"
	secret   = "test-dispatch-secret"
)

// bundle is what most executor tests share.
type bundle struct {
	db       *drivertest.Backend
	provider *providertest.Provider
	srv      *httptest.Server
	tool     executor.Tool
	review   *approvals.Service
	exec     *executor.Executor
}

// options tune setup; nil fields mean the defaults.
type options struct {
	tool   func(*executor.Tool)
	config func(*executor.Config)
	// reviewNow pins the approval clock (a long pause before dispatch).
	reviewNow func() time.Time
	// driver is the database; nil is PostgreSQL.
	driver *drivertest.Driver
	// backend, when set, is the database already opened.
	backend *drivertest.Backend
	// toolName names the tool; "" is toolName.
	toolName string
	// review changes the tool as the review service knows it.
	review func(*approvals.Tool)
}

func setup(t *testing.T, opts *options) *bundle {
	t.Helper()
	if opts == nil {
		opts = &options{}
	}
	driver := drivertest.Postgres
	if opts.driver != nil {
		driver = *opts.driver
	}
	b := &bundle{db: opts.backend, provider: providertest.New()}
	if b.db == nil {
		b.db = driver.Open(t, true)
	}
	b.provider.Secret = []byte(secret)
	b.srv = providertest.Start(t, b.provider)
	b.tool = executor.Tool{
		Method: "POST", URL: b.srv.URL + "/credits", Timeout: 2 * time.Second,
		KeyAware: true, Verify: &executor.Endpoint{URL: b.srv.URL + "/objects?key={key}"},
		MaxAttempts: 3, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour,
		// The least settle time, for tests that make the tool key-unaware
		// (reconcileDue waits it out); the settle time has tests of its own.
		VerifyAfter: time.Millisecond,
	}
	if opts.tool != nil {
		opts.tool(&b.tool)
	}
	name := toolName
	if opts.toolName != "" {
		name = opts.toolName
	}
	reviewTool := approvals.Tool{Name: name, Approvers: []string{approver}, MaxAttempts: b.tool.MaxAttempts}
	if opts.review != nil {
		opts.review(&reviewTool)
	}
	b.review = approvalstest.New(t, approvals.Config{
		DB:     b.db.Store,
		Tools:  map[string]approvals.Tool{name: reviewTool},
		Logger: slog.New(slog.DiscardHandler),
		Now:    opts.reviewNow,
	})
	cfg := executor.Config{
		DB: b.db.Store, Tools: map[string]executor.Tool{name: b.tool}, Secrets: [][]byte{[]byte(secret)},
		Worker: "worker-a", BatchSize: 50, Concurrency: 16,
		Backoff:      func(int) time.Duration { return 0 },
		VerifyWindow: -1,
		Logger:       testLogger(t),
	}
	if opts.config != nil {
		opts.config(&cfg)
	}
	b.exec = executor.New(cfg)
	return b
}

var seq atomic.Int64

// approve submits a fresh intent and approves it, returning the request.
func (b *bundle) approve(t *testing.T) store.Request {
	t.Helper()
	return approveOn(t, b.review, fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), seq.Add(1)))
}

func approveOn(t testing.TB, review *approvals.Service, runID string) store.Request {
	t.Helper()
	return approveKey(t, review, runID, "")
}

// approveKey is approveOn with a client-sent key; "" derives one.
func approveKey(t testing.TB, review *approvals.Service, runID, key string) store.Request {
	t.Helper()
	ctx := context.Background()
	req := approvalstest.Submit(t, review, "agent", approvalstest.Intent(&approvalstest.IntentOpts{
		RunID: &runID, Step: new(`1`), Tool: new(toolName), Reason: new(""), IdempotencyKey: &key,
	}))
	out, err := review.Decide(ctx, approvals.Decision{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: approver, Via: "slack",
	})
	if err != nil || !out.Created {
		t.Fatalf("approving: created=%v err=%v", out.Created, err)
	}
	return out.Request
}

func (b *bundle) execution(t *testing.T, requestID string) store.Execution {
	t.Helper()
	e, err := b.db.Store.LatestExecution(context.Background(), requestID)
	if err != nil {
		t.Fatalf("reading execution: %v", err)
	}
	return e
}

// dispatch runs DispatchOnce and fails the test on error.
func (b *bundle) dispatch(t *testing.T) int {
	t.Helper()
	n, err := b.exec.DispatchOnce(context.Background())
	if err != nil {
		t.Fatalf("dispatching: %v", err)
	}
	return n
}

func (b *bundle) reconcile(t *testing.T) executor.ReconcileReport {
	t.Helper()
	rep, err := b.exec.ReconcileOnce(context.Background())
	if err != nil {
		t.Fatalf("reconciling: %v", err)
	}
	return rep
}

// reconcileDue runs b's reconciler until it has leased n unknowns.
func (b *bundle) reconcileDue(t *testing.T, n int) executor.ReconcileReport {
	t.Helper()
	return reconcileDue(t, b.exec, n)
}

// reconcileDue runs reconcile passes on e until they have leased n unknown
// executions, and returns what the passes did together. A key-unaware tool's
// unknown outcome is leased only once its settle time (VerifyAfter) has
// passed by the database clock since the outcome was recorded, and a pass
// begun straight after the dispatch that recorded it may come sooner (well
// under a millisecond later when commits are cheap): it finds nothing due and
// leaves the row unknown. That wait is the product's, so the test waits for
// the rows to come due rather than for a guessed time.
func reconcileDue(t testing.TB, e *executor.Executor, n int) executor.ReconcileReport {
	t.Helper()
	var rep executor.ReconcileReport
	eventually(t, 10*time.Second, fmt.Sprintf("%d unknown executions to come due and be leased", n), func() bool {
		r, err := e.ReconcileOnce(context.Background())
		if err != nil {
			t.Fatalf("reconciling: %v", err)
		}
		rep.Expired += r.Expired
		rep.Verified += r.Verified
		rep.Settled += r.Settled
		return rep.Verified >= n
	})
	return rep
}

func wantState(t *testing.T, e store.Execution, want store.ExecState) {
	t.Helper()
	if e.State != want {
		code, msg := "", ""
		if e.LastCode != nil {
			code = *e.LastCode
		}
		if e.LastError != nil {
			msg = *e.LastError
		}
		t.Fatalf("execution %d is %s (code %q: %s), want %s", e.ID, e.State, code, msg, want)
	}
}

func wantObjects(t *testing.T, p *providertest.Provider, key string, want int) {
	t.Helper()
	if got := p.ObjectsFor(key); got != want {
		t.Fatalf("provider holds %d objects for %s, want %d", got, key, want)
	}
}

// eventKinds returns the kinds of a request's audit events in order.
func eventKinds(t *testing.T, db store.Store, requestID string) []string {
	t.Helper()
	events, err := db.EventsFor(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = string(e.Kind)
	}
	return kinds
}

// outboxRows returns a request's outbox rows as "kind/round/reason".
func outboxRows(t *testing.T, db *drivertest.Backend, requestID string) []string {
	t.Helper()
	out, err := db.QueryStrings(fmt.Sprintf(`SELECT kind || '/' || round || coalesce('/' || (data->>'reason'), '')
FROM outbox WHERE request_id = '%s' ORDER BY id`, requestID))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// testLogger writes the executor's warnings and errors to the test log.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

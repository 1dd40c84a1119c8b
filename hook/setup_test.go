package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/internal/requestid"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/storetest"
)

const (
	testToken = "agent-token-123"
	// adminToken is the admin agent's, for the admin routes.
	adminToken = "admin-token-456"
	approverA  = "U0APPROVERA"
	approverB  = "U0APPROVERB"
	requester  = "U024BE7LH"
	outsider   = "U0OUTSIDER"
	groupID    = "S0FINANCE"
)

// billingAgent is the agent the tests submit as.
var billingAgent = approvals.Agent{Name: "billing-agent"}

// fixedGroups resolves user groups from a map.
type fixedGroups map[string][]string

func (g fixedGroups) GroupMembers(_ context.Context, id string) ([]string, error) { return g[id], nil }

type bundle struct {
	store store.Store
	// exec and queryInt run raw SQL on the same database ($1… in order).
	exec     func(query string, args ...any) error
	queryInt func(query string, args ...any) (int, error)
	listener store.Notifier
	svc      *approvals.Service
	handler  *Handler
	server   *httptest.Server
	ctx      context.Context
	// answers records what the hook answered, checked against its OpenAPI
	// document as it went.
	answers *apitest.Recorder
	// logs holds the log lines, JSON, as serve writes them.
	logs *syncBuffer
}

// syncBuffer is a bytes.Buffer that handlers may write concurrently.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// setup returns a service on a fresh database, serving the hook.
func setup(t testing.TB) *bundle {
	t.Helper()
	return setupOn(t, storetest.NewURL(t))
}

// setupOn is setup on the PostgreSQL database at url.
func setupOn(t testing.TB, url string) *bundle {
	t.Helper()
	return setupOnBackend(t, drivertest.PostgresAt(t, url))
}

// setupWith is setup on a fresh database of driver d.
func setupWith(t *testing.T, d *drivertest.Driver) *bundle {
	t.Helper()
	return setupOnBackend(t, d.Open(t, true))
}

func setupOnBackend(t testing.TB, bk *drivertest.Backend) *bundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b := &bundle{exec: bk.Exec, queryInt: bk.QueryInt}
	b.serve(t, ctx, bk.Store, bk.Notifier(t))
	return b
}

// serve builds the service on s and serves the hook.
func (b *bundle) serve(t testing.TB, ctx context.Context, s store.Store, listener store.Notifier) {
	t.Helper()
	b.logs = &syncBuffer{}
	logger := slog.New(requestid.Handler(slog.NewJSONHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	batcher := store.NewIntakeBatcher(s, 2, 16)
	if err := batcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = batcher.Stop(context.Background()) })
	svc := approvalstest.New(t, approvals.Config{
		DB: s,
		Tools: map[string]approvals.Tool{
			"billing.credit": {Name: "billing.credit", Approvers: []string{approverA, approverB, requester, groupID}, RequestTTL: time.Hour, MaxAttempts: 3},
			"deploy.release": {Name: "deploy.release", Approvers: []string{approverA}, RequestTTL: time.Hour},
		},
		Groups:  fixedGroups{groupID: {"U0GROUPMEMBER"}},
		Logger:  logger,
		Batcher: batcher,
	})
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(svc, Agents{agent, adminAgent(t)}, listener, logger, NewMetrics(prometheus.NewRegistry()))
	b.answers = apitest.NewRecorder()
	server := httptest.NewServer(apitest.Conform(t, document(t), b.answers, h))
	t.Cleanup(server.Close)
	b.store, b.listener, b.svc, b.server, b.ctx, b.handler = s, listener, svc, server, ctx, h
}

// forEachDriver runs test on PostgreSQL and on SQLite, the two in parallel.
var forEachDriver = drivertest.ForEach

// newIntent is approvalstest's intent (the published test vector), made
// for requester unless opts say for whom.
func newIntent(opts *approvalstest.IntentOpts) approvals.Intent {
	in := approvalstest.Intent(opts)
	if opts == nil || opts.RequestedFor == nil {
		in.RequestedFor = requester
	}
	return in
}

// submit stores an intent and fails the test on error.
func (b *bundle) submit(t *testing.T, opts *approvalstest.IntentOpts) store.Request {
	t.Helper()
	return approvalstest.Submit(t, b.svc, "billing-agent", newIntent(opts))
}

// count returns a single integer from a query.
func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	n, err := b.queryInt(sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func approve(req store.Request, by string) approvals.Decision {
	return approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash, Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack"}
}

// hasWaiter reports whether a long-poll is subscribed to the request.
func (b *bundle) hasWaiter(requestID string) bool { return b.listener.(waiter).Waiting(requestID) > 0 }

// together runs fn(0) … fn(n-1) on n goroutines released at the same moment,
// and returns when all have finished.
func together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// expectCounts checks each query's count.
func (b *bundle) expectCounts(t *testing.T, want map[string]int) {
	t.Helper()
	for sql, n := range want {
		if got := b.count(t, sql); got != n {
			t.Errorf("%s = %d, want %d", sql, got, n)
		}
	}
}

// adminAgent is "ops", an admin agent holding adminToken.
func adminAgent(t testing.TB) Agent {
	t.Helper()
	sum := sha256.Sum256([]byte(adminToken))
	a, err := ParseAgent("ops", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	a.Admin = true
	return a
}

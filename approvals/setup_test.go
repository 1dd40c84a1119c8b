package approvals

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/storetest"
)

// vectorBody is the published test vector's intent as an agent posts it.
const vectorBody = `{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
 "effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"},
 "summary": "Credit 42.00 USD to inv_8841",
 "reason": "customer reported duplicate charge per ticket 5512",
 "requested_for": "U024BE7LH"}`

const (
	approverA = "U0APPROVERA"
	approverB = "U0APPROVERB"
	requester = "U024BE7LH"
	outsider  = "U0OUTSIDER"
	groupID   = "S0FINANCE"
)

// billingAgent is the agent the tests submit as.
var billingAgent = Agent{Name: "billing-agent"}

// fixedGroups resolves user groups from a map.
type fixedGroups map[string][]string

func (g fixedGroups) GroupMembers(_ context.Context, id string) ([]string, error) { return g[id], nil }

type bundle struct {
	store store.Store
	// exec and queryInt run raw SQL on the same database ($1… in order).
	exec     func(query string, args ...any) error
	queryInt func(query string, args ...any) (int, error)
	listener store.Notifier
	svc      *Service
	ctx      context.Context
}

// setup returns a service on a fresh database.
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

// serve builds the service on s.
func (b *bundle) serve(t testing.TB, ctx context.Context, s store.Store, listener store.Notifier) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	batcher := store.NewIntakeBatcher(s, 2, 16)
	if err := batcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = batcher.Stop(context.Background()) })
	svc := mustService(t, Config{
		DB: s,
		Tools: map[string]Tool{
			"billing.credit": {Name: "billing.credit", Approvers: []string{approverA, approverB, requester, groupID}, RequestTTL: time.Hour, MaxAttempts: 3},
			"deploy.release": {Name: "deploy.release", Approvers: []string{approverA}, RequestTTL: time.Hour},
		},
		Groups:  fixedGroups{groupID: {"U0GROUPMEMBER"}},
		Logger:  logger,
		Batcher: batcher,
	})
	b.store, b.listener, b.svc, b.ctx = s, listener, svc, ctx
}

// forEachDriver runs test on PostgreSQL and on SQLite, the two in parallel.
var forEachDriver = drivertest.ForEach

// intentOpts overrides parts of the default intent; nil fields keep the default.
type intentOpts struct {
	RunID  *string
	Effect *string
	Tool   *string
}

func ptr[T any](v T) *T { return &v }

// newIntent returns the published test vector's intent unless opts override it.
func newIntent(opts *intentOpts) Intent {
	in := Intent{
		RunID:        "r-7f3a",
		Step:         []byte(`6`),
		Tool:         "billing.credit",
		Effect:       []byte(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
		Summary:      "Credit 42.00 USD to inv_8841",
		Reason:       "customer reported duplicate charge per ticket 5512",
		RequestedFor: requester,
	}
	if opts == nil {
		return in
	}
	if opts.RunID != nil {
		in.RunID = *opts.RunID
	}
	if opts.Effect != nil {
		in.Effect = []byte(*opts.Effect)
	}
	if opts.Tool != nil {
		in.Tool = *opts.Tool
	}
	return in
}

// submit stores an intent and fails the test on error.
func (b *bundle) submit(t *testing.T, opts *intentOpts) store.Request {
	t.Helper()
	req, _, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(opts))
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	return req
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

func approve(req store.Request, by string) Decision {
	return Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash, Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack"}
}

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

// mustService builds the review service the tests use.
func mustService(t testing.TB, cfg Config) *Service {
	t.Helper()
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

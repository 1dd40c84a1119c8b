package executor

import (
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/executor/httpsender"
	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/store"
)

// Config is what an Executor needs. Zero values mean the defaults.
type Config struct {
	DB    store.Store
	Tools map[string]Tool
	// Secrets sign every dispatch of a tool without Secrets of its own
	// (COUNTERSIGN_DISPATCH_SECRET): each one adds a v1 and a v2 to the
	// header, so while a secret is rotated a provider holding either the
	// old or the new one verifies.
	Secrets [][]byte
	// Worker names this process in claimed_by; default host-pid-random.
	Worker string
	// BatchSize bounds one claim statement (default 200).
	BatchSize int
	// Concurrency bounds the sends in flight per DispatchOnce and the
	// verifications per reconcile pass (default 100). A claimed execution
	// that waited so long for a slot that its send could outlive its claim is
	// released unsent.
	Concurrency int
	// Lanes is how many DispatchOnce loops Start keeps going (default 2), so one
	// batch's sends overlap the next batch's claim.
	Lanes int
	// HTTPClient sends and verifies for the tools sent over HTTP; default
	// httpsender.NewClient, with a per-call timeout from each tool.
	HTTPClient *http.Client
	Logger     *slog.Logger
	Metrics    *Metrics
	// Now pins the clock in tests; nil means the database clock.
	Now func() time.Time
	// Backoff is the delay before retry attempt+1; default exponential from
	// 1s, capped at 5m, with jitter. A Retry-After longer than it wins.
	Backoff func(attempt int) time.Duration
	// VerifyLease is how long a replica holds an unknown while verifying it
	// (default 30s); VerifyWindow is how long an unknown may stay unsettled
	// by verify errors before it goes to a human (default 10m; negative:
	// at the first error).
	VerifyLease  time.Duration
	VerifyWindow time.Duration
	// OnSend, when set, is called as each send starts (benchmarks, tests).
	OnSend func(c store.Claim, at time.Time)
	// Wake and Poll drive the dispatch loops Start runs: a receive on Wake
	// (see postgres.Listener.SubscribeReady) sets an idle loop claiming at once,
	// and with Poll positive every loop also looks at least that often.
	Wake <-chan struct{}
	Poll time.Duration
}

// Executor claims approved executions, performs them and settles their
// outcomes. Its methods are safe for concurrent use, and any number of
// Executors may run against one database.
type Executor struct {
	db      store.Store
	toolset atomic.Pointer[toolset] // replaced whole by SetTools
	secrets [][]byte
	worker  string
	batch   int
	conc    int
	lanes   int
	client  *http.Client
	logger  *slog.Logger
	metrics *Metrics
	nowFn   func() time.Time
	backoff func(int) time.Duration
	lease   time.Duration
	window  time.Duration
	onSend  func(store.Claim, time.Time)
	// clientBuilt: the HTTP client's own timeout comes from the tools at New.
	clientBuilt bool
	wake        <-chan struct{}
	poll        time.Duration

	// The lifecycle (run.go): Start's loops run through the base, and every
	// dispatch enters it, so Stop waits for all of them; when Stop's grace
	// ends the base cuts off the sends still in flight.
	startstop.Base
}

// New returns an Executor for cfg.
func New(cfg Config) *Executor {
	e := &Executor{
		db:      cfg.DB,
		secrets: cfg.Secrets,
		worker:  cfg.Worker,
		batch:   cfg.BatchSize,
		conc:    cfg.Concurrency,
		lanes:   cfg.Lanes,
		client:  cfg.HTTPClient,
		logger:  cfg.Logger,
		metrics: cfg.Metrics,
		nowFn:   cfg.Now,
		backoff: cfg.Backoff,
		lease:   cfg.VerifyLease,
		window:  cfg.VerifyWindow,
		onSend:  cfg.OnSend,
		wake:    cfg.Wake,
		poll:    cfg.Poll,
	}
	ts := newToolset(cfg.Tools)
	longest := ts.longestTimeout()
	if e.worker == "" {
		e.worker = defaultWorker()
	}
	if e.batch <= 0 {
		e.batch = 200
	}
	if e.conc <= 0 {
		e.conc = 100
	}
	if e.lanes <= 0 {
		e.lanes = 2
	}
	if e.client == nil {
		e.client = httpsender.NewClient(longest+5*time.Second, e.conc*e.lanes)
		e.clientBuilt = true
	}
	if e.logger == nil {
		e.logger = slog.New(slog.DiscardHandler)
	}
	e.toolset.Store(ts.bind(e))
	for name, t := range ts.tools {
		for what, ep := range map[string]*Endpoint{"verify": t.Verify, "precondition": t.Precondition} {
			if ep != nil && ep.Err() != nil {
				// Serve's configuration check refuses these; a program that
				// builds tools itself hears it here and at every use.
				e.logger.Error("unusable "+what+" URL", slog.String("tool", name), slog.String("error", ep.Err().Error()))
			}
		}
	}
	if e.metrics == nil {
		e.metrics = NewMetrics(nil)
	}
	if e.backoff == nil {
		e.backoff = DefaultBackoff
	}
	if e.lease <= 0 {
		e.lease = 30 * time.Second
	}
	switch {
	case e.window < 0:
		e.window = 0
	case e.window == 0:
		e.window = 10 * time.Minute
	}
	return e
}

// secretsFor are the secrets that sign tool's dispatches.
func (e *Executor) secretsFor(tool Tool) [][]byte {
	if len(tool.Secrets) > 0 {
		return tool.Secrets
	}
	return e.secrets
}

// Worker is the name this executor claims under.
func (e *Executor) Worker() string { return e.worker }

func (e *Executor) now() *time.Time {
	if e.nowFn == nil {
		return nil
	}
	t := e.nowFn()
	return &t
}

// DefaultBackoff doubles from one second, caps at five minutes and adds up to
// 50% jitter so retries of a burst do not arrive together.
func DefaultBackoff(attempt int) time.Duration {
	d := time.Second << min(max(attempt-1, 0), 12)
	d = min(d, 5*time.Minute)
	return d/2 + rand.N(d/2+1)
}

func defaultWorker() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

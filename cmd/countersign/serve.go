package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/robfig/cron/v3"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/sandbox"
	"github.com/countersign/countersign/store"
)

// Intake group commit: one flushing transaction at a time gathers everything
// that arrived while the previous one committed (measured better than 2 or 4
// concurrent flushers at 8 and 32 clients), up to 64 intents per commit.
const (
	intakeFlushers = 1
	intakeMaxBatch = 64
)

// Every intent starts with a read of its key (is it a replay?); reads that
// arrive together share one query, up to 64 keys, from replayReaders
// concurrent queries.
const (
	replayReaders  = 2
	replayMaxBatch = 64
)

// app is what serve's components share.
type app struct {
	cfg      *Config
	logger   *slog.Logger
	db       store.Store
	notifier store.Notifier
	registry *prometheus.Registry
	mux      *http.ServeMux
	cron     *cron.Cron
	review   *approvals.Service
	executor *executor.Executor

	// What shutdown stops, in order (see shutdown); nil or zero when it
	// was never started.
	stopRunning  context.CancelFunc // ends the context everything runs on
	backend      *backend
	batcher      *store.IntakeBatcher
	stopBatcher  context.CancelFunc
	unsubscribe  func() // the executor's wake-ups
	bot          *bot.Bot
	socketDone   chan struct{}
	cronStarted  bool
	shutdownFrom time.Time // when the shutdown signal arrived
}

func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	logger := newLogger(cfg.LogFormat, stderr)
	// Listening comes first: the local demo tool dispatches to this address.
	ln, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	base := "http://" + ln.Addr().String()
	var localToken string
	if cfg.Local() && cfg.dataDirErr == nil {
		if err := makeDataDir(cfg.DataDir); err != nil {
			return err
		}
		if localToken, err = localAgentToken(cfg.DataDir); err != nil {
			return err
		}
		cfg.applyLocalDefaults(base, localToken)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("the configuration has problems:\n%w", err)
	}

	b, err := openBackend(ctx, cfg, logger)
	if err != nil {
		return err
	}
	db := b.store
	// Shutdown ends ctx first, as a signal does, also when serve stops for
	// another reason: nothing more is claimed or scheduled.
	ctx, stopRunning := context.WithCancel(ctx)

	a := &app{
		cfg:         cfg,
		logger:      logger,
		db:          db,
		notifier:    b.notifier,
		registry:    prometheus.NewRegistry(),
		mux:         http.NewServeMux(),
		backend:     b,
		stopRunning: stopRunning,
	}
	defer a.shutdown()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.cron = cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{logger}), cron.Recover(cronLogger{logger})),
		cron.WithLogger(cronLogger{logger}))

	// The batcher outlives the signal: requests the HTTP server is still
	// finishing commit through it. shutdown stops it.
	a.batcher = store.NewIntakeBatcher(db, intakeFlushers, intakeMaxBatch)
	var batcherCtx context.Context
	batcherCtx, a.stopBatcher = context.WithCancel(context.WithoutCancel(ctx))
	go a.batcher.Run(batcherCtx)
	a.review = &approvals.Service{DB: db, Tools: cfg.ReviewTools(), Batcher: a.batcher, Reader: b.replays, Logger: logger.With("component", "approvals")}
	hook := approvals.NewHandler(a.review, cfg.AgentList(), a.notifier, logger.With("component", "hook"), approvals.NewMetrics(a.registry))
	a.mux.Handle("/v1/", hook)
	a.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	a.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		pingCtx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := db.Ping(pingCtx); err != nil {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	a.mux.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))

	if _, err := a.cron.AddFunc(cfg.File.Executor.ExpirySchedule, func() {
		if _, err := a.review.ExpireOnce(ctx); err != nil {
			logger.Error("expiry sweep failed", slog.String("error", err.Error()))
		}
	}); err != nil {
		return fmt.Errorf("scheduling expiry: %w", err)
	}
	if cfg.SlackBotToken == "" && !cfg.InboxEnabled() {
		logger.Warn("SLACK_BOT_TOKEN is not set and the inbox is off: cards wait in the outbox until Slack is configured")
	}
	var inboxURL string
	if cfg.InboxEnabled() {
		inboxURL = a.mountInbox(ln.Addr())
	}
	if cfg.Local() {
		provider := sandbox.New()
		provider.Secret = []byte(cfg.DispatchSecret) // it counts writes that did not come through the gate
		a.mux.Handle(sandboxPath+"/", http.StripPrefix(sandboxPath, provider))
	}

	if a.executor, err = a.startExecutor(ctx); err != nil {
		return err
	}
	if err := a.startBot(ctx); err != nil {
		return err
	}
	a.cron.Start()
	a.cronStarted = true
	if cfg.Local() {
		printLocalBanner(stderr, base, b.where, localToken, inboxURL)
	}
	return a.serveHTTP(ctx, ln)
}

func (a *app) serveHTTP(ctx context.Context, ln net.Listener) error {
	server := &http.Server{
		Handler:           a.mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      approvals.MaxWait + 15*time.Second, // long-polls answer within MaxWait
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	a.logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("version", versionString()))
	errc := make(chan error, 1)
	go func() { errc <- server.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.shutdownFrom = time.Now()
	// Stop accepting and let the handlers finish; what is still running
	// after httpShutdownTimeout (a long-poll) is cut.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		_ = server.Close()
	}
	return nil
}

// httpShutdownTimeout bounds how long shutdown waits for HTTP handlers.
const httpShutdownTimeout = 10 * time.Second

// cronStopTimeout bounds how long shutdown waits for running cron jobs; they
// run on the signal's context, so they end soon after it.
const cronStopTimeout = 10 * time.Second

// shutdown stops what serve started, in order (docs/EXECUTOR.md,
// "Shutdown"), after the HTTP server has stopped: the executor and the bot
// finish what they have in flight, within the executor's grace counted from
// the signal; the cron waits for its running jobs; the intake batcher, the
// replay reader and the listener stop; the store closes last. It also tears
// down a setup that failed halfway.
func (a *app) shutdown() {
	a.stopRunning()
	from := a.shutdownFrom
	if from.IsZero() {
		from = time.Now()
	}
	grace := executor.MaxShutdownGrace
	if a.executor != nil {
		grace = a.executor.ShutdownGrace()
	}
	graceCtx, cancel := context.WithDeadline(context.Background(), from.Add(grace))
	defer cancel()
	if a.executor != nil {
		if err := a.executor.Stop(graceCtx); err != nil {
			a.logger.Warn("executor stopped before its sends ended", slog.String("error", err.Error()))
		}
		a.unsubscribe()
	}
	a.stopBot(graceCtx)
	if a.cronStarted {
		select {
		case <-a.cron.Stop().Done():
		case <-time.After(cronStopTimeout):
			a.logger.Warn("cron jobs still running at shutdown")
		}
	}
	if a.batcher != nil {
		a.stopBatcher()
		<-a.batcher.Done()
	}
	a.backend.close()
	a.logger.Info("stopped")
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err.Error())...)
}

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
}

func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	// Listening comes first: the local demo tool dispatches to this address.
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
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
	defer b.store.Close()
	db := b.store

	a := &app{
		cfg:      cfg,
		logger:   logger,
		db:       db,
		notifier: b.notifier,
		registry: prometheus.NewRegistry(),
		mux:      http.NewServeMux(),
	}
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.cron = cron.New(cron.WithChain(cron.SkipIfStillRunning(cronLogger{logger}), cron.Recover(cronLogger{logger})),
		cron.WithLogger(cronLogger{logger}))

	batcher := store.NewIntakeBatcher(db, intakeFlushers, intakeMaxBatch)
	go batcher.Run(ctx)
	a.review = &approvals.Service{DB: db, Tools: cfg.ReviewTools(), Batcher: batcher, Reader: b.replays, Logger: logger.With("component", "approvals")}
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
	defer func() { <-a.cron.Stop().Done() }()
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
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := server.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	a.logger.Info("stopped")
	return nil
}

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ l *slog.Logger }

func (c cronLogger) Info(msg string, kv ...any) { c.l.Debug("cron: "+msg, kv...) }
func (c cronLogger) Error(err error, msg string, kv ...any) {
	c.l.Error("cron: "+msg, append(kv, "error", err.Error())...)
}

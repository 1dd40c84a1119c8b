package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/sandbox"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Intake group commit: one flushing transaction at a time gathers everything
// that arrived while the previous one committed (measured better than 2 or 4
// concurrent flushers at 8 and 32 clients), up to 64 intents per commit.
const (
	intakeFlushers = 1
	intakeMaxBatch = 64
)

// app is serve's components, built once by newApp, and what they share.
type app struct {
	cfg      *config.Config
	logger   *slog.Logger
	db       store.Store
	notifier store.Notifier
	registry *prometheus.Registry
	mux      *http.ServeMux
	sched    *scheduler
	review   *approvals.Service
	surfaces []surface.Adapter // review surfaces besides Slack (email.go, teams.go)
	// reviewMetrics counts votes; hookMetrics the hook's traffic.
	reviewMetrics *approvals.Metrics
	hookMetrics   *hook.Metrics
	http          *httpServer
	// What a configuration reload replaces (reload.go).
	api       *hook.Handler
	executor  *executor.Executor
	callbacks *callback.Deliverer
	// gateway is the MCP gateway, when upstreams are configured; reloaded
	// is the configuration the last reload took.
	gateway  *upstreams
	reloaded atomic.Pointer[config.Config]
	// consoleGroups resolves oidc:group: approvers; nil with neither a
	// console nor Slack. A reload replaces its hand-kept members.
	consoleGroups *console.Groups
	// toolsGeneration moves on whenever the tools change (applyTools):
	// what was built from the old ones is built again.
	toolsGeneration atomic.Uint64
	// admin serves the health checks and metrics when COUNTERSIGN_ADMIN_LISTEN
	// gives them a listener of their own; nil otherwise.
	admin    *httpServer
	inboxURL string
	where    string // the store, for people
	// draining is set at the shutdown signal: /readyz fails from then on
	// (drain.go).
	draining atomic.Bool

	lifecycle
}

func serve(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	loaded, err := config.Load(getenv)
	if err != nil {
		return err
	}
	// A log that can no longer be written, its reader gone with the same
	// signal (`countersign serve | jq` in one process group), must not end
	// serve in the middle of its drain and shutdown, cutting the sends in
	// flight: the lines are lost, not the writes. Go ends a program on a
	// broken standard output or error unless SIGPIPE is handled.
	signal.Ignore(syscall.SIGPIPE)
	// SIGHUP is caught from the start, not once serve listens: Go's default
	// for it ends the program, and an operator's reload may come while a
	// replica is still starting. One that arrives early is handled once the
	// loop below runs, and reads the file again then.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	logger := newLogger(loaded.LogFormat, stderr)
	cfg, localToken, err := resolveConfig(loaded, "")
	if err != nil {
		return err
	}
	// The configuration is checked before the port is bound: a mistake
	// leaves the port free.
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("the configuration has problems:\n%w", err)
	}
	ln, err := listen(cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	if cfg.Local() && localBase(cfg.Listen) == "" {
		// An ephemeral port is known only now: the demo tool dispatches
		// to it. Only the demo tool's URLs change, which were valid above.
		if cfg, _, err = resolveConfig(loaded, "http://"+ln.Addr().String()); err != nil {
			return err
		}
		// Validating again compiles the demo tool's effect schema into
		// the copy serve runs on.
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("the configuration has problems:\n%w", err)
		}
	}

	a, err := newApp(ctx, cfg, logger, ln)
	if err != nil {
		return err
	}
	if err := a.addLocalReviews(getenv); err != nil {
		a.db.Close()
		return err
	}
	if err := a.start(ctx); err != nil {
		return err
	}
	// Plain text for the person at the terminal, whatever the log format.
	switch {
	case cfg.Local():
		printLocalBanner(stderr, a.http.base(), a.where, localToken, a.inboxURL)
	case a.inboxURL != "" && (cfg.DatabaseURL == "" || len(localReviewers(cfg)) > 0):
		printConfiguredBanner(stderr, cfg, a.http.base(), a.where, a.inboxURL)
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case err = <-a.http.served:
			done = true
		case <-hup:
			a.reload(getenv)
		}
	}
	if err == nil {
		again := make(chan os.Signal, 1)
		signal.Notify(again, os.Interrupt, syscall.SIGTERM)
		err = a.drain(cfg.DrainDelay(), again)
		signal.Stop(again)
	}
	a.stop(time.Now())
	a.logger.Info("stopped")
	return err
}

// resolveConfig returns the configuration serve runs on: loaded itself
// with a file, else the local defaults, whose demo tool dispatches to base
// (or, when base is empty, to the configured listen address) and whose
// agent token it returns.
func resolveConfig(loaded *config.Config, base string) (*config.Config, string, error) {
	if !loaded.Local() || loaded.DataDirErr() != nil {
		return loaded, "", nil
	}
	if err := makeDataDir(loaded.DataDir); err != nil {
		return nil, "", err
	}
	token, err := localAgentToken(loaded.DataDir)
	if err != nil {
		return nil, "", err
	}
	if base == "" {
		base = localBase(loaded.Listen)
	}
	if base == "" {
		base = "http://127.0.0.1:0" // replaced once the port is bound
	}
	return withLocal(loaded, base, token), token, nil
}

// localBase is how this machine reaches the listen address listen, or ""
// when its port is chosen at bind time (0) or it does not parse.
func localBase(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return ""
	}
	if p, err := strconv.Atoi(port); err != nil || p == 0 {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// newApp opens the store and builds every component serve runs, in the
// order they start: the store, what delivers its wake-ups and batches its
// reads and writes, the executor, the bot, the sweeps, and the HTTP server
// last, so nothing is served before what serves it runs. They stop in
// reverse order (see lifecycle.stop and docs/EXECUTOR.md, "Shutdown").
func newApp(ctx context.Context, cfg *config.Config, logger *slog.Logger, ln net.Listener) (_ *app, err error) {
	b, err := openBackend(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.store.Close()
		}
	}()
	a := &app{
		cfg: cfg, logger: logger, db: b.store, notifier: b.notifier, where: b.where,
		registry:  prometheus.NewRegistry(),
		mux:       http.NewServeMux(),
		lifecycle: lifecycle{logger: logger},
	}
	a.sched = newScheduler(logger.With("component", "scheduler"), b.leader, a.registry)
	registerLeaderGauge(a.registry, b.leader)
	defer func() {
		if err != nil && a.admin != nil {
			a.admin.ln.Close()
		}
	}()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	a.add("store", funcs{stop: func(context.Context) error { b.store.Close(); return nil }}, 0)
	if b.listener != nil {
		a.add("listener", b.listener, 0)
	}
	if b.holdsLock != nil {
		// Started before the sweeps and stopped after them; stopping
		// closes its session, which hands the sweeps on at once.
		a.add("sweep leadership", b.holdsLock, 0)
	}
	// The batcher outlives the signal: requests the HTTP server is still
	// finishing commit through it.
	batcher := store.NewIntakeBatcher(b.store, intakeFlushers, intakeMaxBatch)
	a.add("intake batcher", batcher, 0)

	slackClient := a.slackClient()
	if slackClient != nil {
		if err := checkSlack(ctx, slackClient, cfg.SlackCheck, logger.With("component", "bot")); err != nil {
			return nil, err
		}
	} else {
		logSlackOff(cfg, logger.With("component", "bot"))
	}
	var groups approvals.GroupResolver
	if slackClient != nil {
		groups = newGroups(slackClient)
	}
	if a.consoleGroups = consoleGroups(cfg, groups); a.consoleGroups != nil {
		groups = a.consoleGroups
	}
	a.reviewMetrics, a.hookMetrics = approvals.NewMetrics(a.registry), hook.NewMetrics(a.registry)
	receipts, err := receiptKeys(cfg)
	if err != nil {
		return nil, err
	}
	if a.review, err = approvals.New(approvals.Config{
		DB: b.store, Tools: cfg.ReviewTools(), Groups: groups, Batcher: batcher,
		Logger: logger.With("component", "approvals"), Owners: cfg.AgentOwners(), Metrics: a.reviewMetrics,
		Receipts: receipts,
	}); err != nil {
		return nil, err
	}
	if err := a.mountRoutes(); err != nil {
		return nil, err
	}
	if err := a.sched.addLeaderSweep("expiry", cfg.File.Executor.ExpirySchedule, func(ctx context.Context) error {
		_, err := a.review.ExpireOnce(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	// Agent-executed writes whose outcome never came need a person; the
	// sweep runs with the expiry's schedule and does nothing without such
	// a tool.
	if err := a.sched.addLeaderSweep("outcomes", cfg.File.Executor.ExpirySchedule, func(ctx context.Context) error {
		_, err := a.review.ExpireOutcomesOnce(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	if cfg.NudgesConfigured() {
		if err := a.sched.addLeaderSweep("reminders", cfg.File.Executor.ReminderSchedule, func(ctx context.Context) error {
			_, err := a.review.NudgeOnce(ctx)
			return err
		}); err != nil {
			return nil, err
		}
	}
	configured := func() map[string]bool {
		names := map[string]bool{}
		for name := range a.review.CurrentTools() {
			names[name] = true
		}
		return names
	}
	a.registry.MustRegister(approvals.NewPendingCollector(a.review, logger.With("component", "metrics")),
		newStoreCollector(a.db, configured, logger.With("component", "metrics")))
	warnUnconfiguredReady(ctx, a.db, configured(), logger.With("component", "executor"))
	if cfg.SlackBotToken == "" && !cfg.InboxEnabled() {
		logger.Warn("SLACK_BOT_TOKEN is not set and the inbox is off: cards wait in the outbox until Slack is configured")
	}
	if cfg.InboxEnabled() {
		a.inboxURL = a.mountInbox(ln.Addr())
	}
	a.mountConsole()
	if cfg.Local() {
		provider := sandbox.New()
		provider.Secret = cfg.DispatchSecrets()[0] // it counts writes that did not come through the gate
		a.mux.Handle(sandboxPath+"/", http.StripPrefix(sandboxPath, provider))
	}

	a.addGateway()
	ex, err := a.addExecutor()
	if err != nil {
		return nil, err
	}
	a.executor = ex
	// Without Slack, the Teams surface's loop delivers email's cards too.
	if err := a.addEmail(slackClient != nil || a.cfg.File.Teams.Enabled()); err != nil {
		return nil, err
	}
	if err := a.addTeams(slackClient != nil); err != nil {
		return nil, err
	}
	if err := a.addBot(slackClient, groups, ex); err != nil {
		return nil, err
	}
	a.addCallbacks()
	if err := a.addRetention(); err != nil {
		return nil, err
	}
	// The sweeps stop claiming at the signal; what they claimed has the
	// executor's grace to finish.
	a.add("scheduler", a.sched, ex.ShutdownGrace())
	if a.admin != nil {
		// Before the public server, so it stops after it: metrics and
		// health stay readable while the public requests drain.
		a.add("admin http server", a.admin, httpShutdownTimeout)
	}
	a.http = newHTTPServer(a.closeWhileDraining(a.mux), ln, logger)
	// The HTTP server does not track the connections of parked long-polls:
	// they are answered from the moment it starts to shut down, and the
	// part before it waits for the last of them once it has stopped.
	a.http.server.RegisterOnShutdown(a.api.StopParking)
	a.add("parked long-polls", funcs{stop: a.api.AnswerParked}, httpShutdownTimeout+parkedAnswerGrace)
	a.add("http server", a.http, httpShutdownTimeout)
	return a, nil
}

// add appends a component to the start order.
func (a *app) add(name string, c component, grace time.Duration) {
	a.parts = append(a.parts, part{name: name, component: c, grace: grace})
}

// mountRoutes mounts the hook, MCP over HTTP, the health checks and the
// metrics: the last two on a listener of their own when
// COUNTERSIGN_ADMIN_LISTEN names one.
func (a *app) mountRoutes() error {
	api := hook.NewHandler(a.review, a.cfg.AgentList(), a.notifier, a.logger.With("component", "hook"), a.hookMetrics)
	api.SetToolHooks(a.cfg.ToolHooks())
	a.api = api
	a.mux.Handle("/v1/", api)
	a.mux.Handle(hook.JWKSPath, api)
	a.mux.Handle("/mcp", a.mcpHandler(api.Agents(), api))
	ops := a.mux
	if a.cfg.AdminListen != "" {
		ln, err := listenAs(a.cfg.AdminListen, "COUNTERSIGN_ADMIN_LISTEN")
		if err != nil {
			return err
		}
		ops = http.NewServeMux()
		a.admin = newHTTPServer(ops, ln, a.logger.With("listener", "admin"))
		a.admin.announce = "admin listening"
	}
	ops.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	ops.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if a.draining.Load() {
			// Kept apart from the database's answer: a load balancer
			// takes either as "send elsewhere".
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		pingCtx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := a.db.Ping(pingCtx); err != nil {
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
		// An upstream that is down makes only its own tools fail: serve
		// stays ready, and says so.
		if a.gateway != nil {
			for _, h := range a.gateway.gw.Health() {
				fmt.Fprintln(w, upstreamHealthLine(h))
			}
		}
	})
	ops.Handle("GET /metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{}))
	return nil
}

// httpShutdownTimeout bounds how long shutdown waits for HTTP handlers.
const httpShutdownTimeout = 10 * time.Second

// parkedAnswerGrace is how long parked long-polls may take to be answered
// after the HTTP server's shutdown timeout: each one re-reads once.
const parkedAnswerGrace = 5 * time.Second

// httpServer serves the mux on the listener from Start to Stop.
type httpServer struct {
	server *http.Server
	ln     net.Listener
	logger *slog.Logger
	// announce is the log line's message once it listens: "listening" for
	// the public listener, which tests and scripts look for.
	announce string
	// served gets what Serve returned when it ended on its own; serve
	// then shuts down.
	served chan error

	startstop.Base // Serve runs on it: Stop returns once Serve has
}

func newHTTPServer(h http.Handler, ln net.Listener, logger *slog.Logger) *httpServer {
	return &httpServer{
		server: &http.Server{
			Handler:           refuseLargeHeaders(h),
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       15 * time.Second,
			WriteTimeout:      hook.MaxWait + 15*time.Second, // long-polls answer within MaxWait
			IdleTimeout:       2 * time.Minute,
			MaxHeaderBytes:    readHeaderBytes, // refuseLargeHeaders refuses past maxHeaderBytes
		},
		ln: ln, logger: logger, announce: "listening", served: make(chan error, 1),
	}
}

// base is the server's URL.
func (s *httpServer) base() string { return "http://" + s.ln.Addr().String() }

// Start serves in the background and returns.
func (s *httpServer) Start(ctx context.Context) error {
	if _, err := s.StartInit(ctx); err != nil {
		return fmt.Errorf("starting the HTTP server: %w", err)
	}
	s.logger.Info(s.announce, slog.String("addr", s.ln.Addr().String()), slog.String("version", versionString()))
	return s.Go(func() {
		if err := s.server.Serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
			s.served <- err
		}
	})
}

// Stop stops accepting and lets the handlers finish; what is still running
// when ctx ends (a long-poll) is cut. It returns once Serve has.
func (s *httpServer) Stop(ctx context.Context) error {
	err := s.server.Shutdown(ctx)
	if err != nil {
		_ = s.server.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
	}
	return errors.Join(err, s.Base.Stop(context.WithoutCancel(ctx)))
}

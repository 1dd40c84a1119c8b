package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/gateway"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/wire"
)

// upstreams is serve's MCP gateway: the connections to the configured
// upstreams, and the tools they add to the configured ones. An upstream's
// tools stay known while it is down, so its requests can still be
// decided, and its sends answer upstream_down until it is back.
type upstreams struct {
	gw      *gateway.Gateway
	logger  *slog.Logger
	metrics *gatewayMetrics
	// apply hands the tools of the configuration in force and the
	// upstreams' to the executor and the review service; config is the
	// configuration in force.
	apply  func()
	config func() *config.Config

	mu    sync.Mutex
	known map[string][]gateway.Tool // by upstream: what it listed last
}

// gatewayUpstreams is the configuration's upstreams as package gateway
// takes them.
func gatewayUpstreams(cfg *config.Config) []gateway.Upstream {
	names := make([]string, 0, len(cfg.File.Upstreams))
	for name := range cfg.File.Upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	list := make([]gateway.Upstream, 0, len(names))
	for _, name := range names {
		u := cfg.File.Upstreams[name]
		list = append(list, gateway.Upstream{Name: name, Command: u.Command, URL: u.URL, Headers: u.Headers, Env: u.Env,
			Trusted: u.Trusted, Reads: u.Reads, Idempotent: u.Idempotent, CallTimeout: u.CallTimeout})
	}
	return list
}

// addGateway connects serve to the configured upstreams, if any: started
// before the executor, so that the upstreams' tools are claimed as soon as
// they are listed, and stopped after it.
func (a *app) addGateway() {
	if len(a.cfg.File.Upstreams) == 0 {
		return
	}
	logger := a.logger.With("component", "gateway")
	u := &upstreams{gw: gateway.New(gatewayUpstreams(a.cfg), logger), logger: logger,
		metrics: newGatewayMetrics(a.registry), known: map[string][]gateway.Tool{}}
	u.apply = func() { a.applyTools(a.currentConfig()) }
	u.config = a.currentConfig
	u.gw.OnChange(u.changed)
	a.gateway = u
	a.api.SetGateway(u)
	a.add("gateway", funcs{start: u.gw.Start, stop: func(context.Context) error { u.gw.Stop(); return nil }}, 5*time.Second)
}

// changed keeps what each connected upstream lists now, and applies the
// tools again.
func (u *upstreams) changed() {
	u.mu.Lock()
	byUpstream := map[string][]gateway.Tool{}
	for _, t := range u.gw.Tools() {
		byUpstream[t.Upstream] = append(byUpstream[t.Upstream], t)
	}
	for _, h := range u.gw.Health() {
		u.metrics.up.WithLabelValues(h.Name).Set(boolGauge(h.Up))
		if h.Up {
			u.known[h.Name] = byUpstream[h.Name]
		}
	}
	u.mu.Unlock()
	u.apply()
}

// tools is every upstream tool known, reads included.
func (u *upstreams) tools() []gateway.Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	var list []gateway.Tool
	for _, ts := range u.known {
		list = append(list, ts...)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Exposed < list[j].Exposed })
	return list
}

// knownTool is the known tool exposed as name, its upstream up or down.
// Every read passes here: it looks under the lock without copying or
// sorting the list tools makes.
func (u *upstreams) knownTool(name string) (gateway.Tool, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, ts := range u.known {
		for _, t := range ts {
			if t.Exposed == name {
				return t, true
			}
		}
	}
	return gateway.Tool{}, false
}

// configTools is the known tools as the configuration takes them.
func (u *upstreams) configTools() []config.UpstreamTool {
	var list []config.UpstreamTool
	for _, t := range u.tools() {
		list = append(list, config.UpstreamTool{Upstream: t.Upstream, Exposed: t.Exposed, Description: upstreamDescription(t),
			InputSchema: t.InputSchema, Read: t.Read, Idempotent: t.Idempotent})
	}
	return list
}

// upstreamDescription is what agents and reviewers read of an upstream
// tool: where it runs, its annotations, and its own description.
func upstreamDescription(t gateway.Tool) string {
	var hints []string
	a := t.Annotations
	for _, h := range []struct {
		name string
		v    *bool
	}{{"read-only", a.ReadOnly}, {"destructive", a.Destructive}, {"idempotent", a.Idempotent}, {"open-world", a.OpenWorld}} {
		if h.v != nil {
			hints = append(hints, map[bool]string{true: "", false: "not "}[*h.v]+h.name)
		}
	}
	s := t.Name + " on the MCP server " + t.Upstream
	if len(hints) > 0 {
		s += " (it says: " + strings.Join(hints, ", ") + ")"
	}
	if t.Description != "" {
		s += ". " + t.Description
	}
	return s
}

// Tools lists the upstream tools for the agent API (hook.Gateway).
func (u *upstreams) Tools() []wire.GatewayTool {
	up := map[string]bool{}
	for _, h := range u.gw.Health() {
		up[h.Name] = h.Up
	}
	cfg := u.config()
	list := u.tools()
	views := make([]wire.GatewayTool, 0, len(list))
	for _, t := range list {
		a := t.Annotations
		v := wire.GatewayTool{Name: t.Exposed, Upstream: t.Upstream, Tool: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Read: t.Read, Up: up[t.Upstream], HoldSeconds: int(cfg.UpstreamHold(t.Upstream) / time.Second),
			Annotations: wire.GatewayAnnotations{Title: a.Title, ReadOnly: a.ReadOnly, Destructive: a.Destructive, Idempotent: a.Idempotent, OpenWorld: a.OpenWorld}}
		views = append(views, v)
	}
	return views
}

// Call passes a read through (hook.Gateway), counted and logged.
func (u *upstreams) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	t, ok := u.knownTool(tool)
	if !ok {
		return nil, hook.ErrUnknownGatewayTool
	}
	if !t.Read {
		return nil, hook.ErrNotARead
	}
	start := time.Now()
	res, err := u.gw.Call(ctx, tool, args)
	u.metrics.latency.WithLabelValues(t.Upstream).Observe(time.Since(start).Seconds())
	var down *gateway.DownError
	switch {
	case errors.As(err, &down):
		u.metrics.calls.WithLabelValues(t.Upstream, "read", "down").Inc()
		return nil, &hook.UpstreamDownError{Upstream: t.Upstream}
	case err != nil:
		u.metrics.calls.WithLabelValues(t.Upstream, "read", "error").Inc()
		return nil, err
	}
	u.metrics.calls.WithLabelValues(t.Upstream, "read", "ok").Inc()
	u.logger.InfoContext(ctx, "read passed through", slog.String("tool", tool), slog.Bool("is_error", res.IsError),
		slog.Duration("took", time.Since(start)))
	body, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding the upstream's result: %w", err)
	}
	return body, nil
}

// sender is the gateway's MCP sender, each send counted.
func (u *upstreams) sender() sender.Sender { return countedSender{u.gw.Sender(), u} }

type countedSender struct {
	sender.Sender
	u *upstreams
}

func (s countedSender) Send(ctx context.Context, w sender.Write) sender.Attempt {
	upstream, _, _ := strings.Cut(w.Tool, "__")
	start := time.Now()
	at := s.Sender.Send(ctx, w)
	s.u.metrics.latency.WithLabelValues(upstream).Observe(time.Since(start).Seconds())
	s.u.metrics.calls.WithLabelValues(upstream, "gated", string(at.Outcome)).Inc()
	return at
}

// currentConfig is the configuration in force: the one serve started with,
// or the last one a reload took.
func (a *app) currentConfig() *config.Config {
	if c := a.reloaded.Load(); c != nil {
		return c
	}
	return a.cfg
}

// applyTools hands the executor and the review service the tools of cfg
// and, with a gateway, its upstreams' gated tools under cfg's settings.
func (a *app) applyTools(cfg *config.Config) {
	exec, review := cfg.ExecutorTools(), cfg.ReviewTools()
	if a.gateway != nil {
		list := a.gateway.configTools()
		maps.Copy(exec, cfg.UpstreamExecutorTools(list, a.gateway.sender()))
		upstreamReview, errs := cfg.UpstreamReviewTools(list)
		for _, err := range errs {
			a.gateway.logger.Warn("an upstream tool's input schema is not checked", slog.String("problem", err.Error()))
		}
		for name, t := range upstreamReview {
			if _, clash := review[name]; !clash {
				review[name] = t
			}
		}
	}
	// The executor first: from the moment intake freezes a request under
	// the new policy, the executor re-checks approvals against it too.
	a.executor.SetTools(exec)
	a.review.Reconfigure(review, cfg.AgentOwners())
	a.toolsGeneration.Add(1)
}

// gatewayMetrics are the gateway's: each upstream's connection, and its
// calls by kind and outcome with their latency.
type gatewayMetrics struct {
	up      *prometheus.GaugeVec
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func newGatewayMetrics(reg prometheus.Registerer) *gatewayMetrics {
	m := &gatewayMetrics{
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "countersign_gateway_upstream_up",
			Help: "1 while the MCP gateway is connected to the upstream, 0 while it is not."}, []string{"upstream"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "countersign_gateway_calls_total",
			Help: "Calls made on upstreams: reads passed through and gated calls sent, by outcome."}, []string{"upstream", "kind", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "countersign_gateway_call_seconds",
			Help: "How long one call on an upstream took.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 9)}, []string{"upstream"}),
	}
	reg.MustRegister(m.up, m.calls, m.latency)
	return m
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// upstreamHealthLine is an upstream's line in /readyz: up or down, and why.
func upstreamHealthLine(h gateway.Health) string {
	if h.Up {
		return fmt.Sprintf("upstream %s: up, %d tools, since %s", h.Name, h.Tools, h.Since.UTC().Format(time.RFC3339))
	}
	line := "upstream " + h.Name + ": down"
	if h.LastError != "" {
		line += ": " + h.LastError
	}
	return line
}

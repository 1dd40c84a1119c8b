package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// storeScrapeTimeout bounds the store reads of one scrape.
const storeScrapeTimeout = 2 * time.Second

// storeCollector reads, at each scrape, whether the store answers and how
// many Slack deliveries wait in the outbox: what the alert rules in
// deploy/prometheus watch. Read at scrape time, every replica reports the
// same backlog and its own view of the database.
type storeCollector struct {
	db      store.Store
	tools   func() map[string]bool // the tools configured now
	logger  *slog.Logger
	up      *prometheus.Desc
	backlog *prometheus.Desc
	orphans *prometheus.Desc
}

func newStoreCollector(db store.Store, tools func() map[string]bool, logger *slog.Logger) prometheus.Collector {
	return &storeCollector{
		db: db, tools: tools, logger: logger,
		up: prometheus.NewDesc("countersign_database_up",
			"1 when the store answered a ping at this scrape, 0 when it did not.", nil, nil),
		backlog: prometheus.NewDesc("countersign_outbox_backlog",
			"Slack deliveries (cards, updates, thread replies) waiting to be delivered.", nil, nil),
		orphans: prometheus.NewDesc("countersign_ready_unconfigured_tool",
			"Approved executions waiting to be sent whose tool is no longer configured, so nothing will send them, by tool.", []string{"tool"}, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.backlog
	ch <- c.orphans
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storeScrapeTimeout)
	defer cancel()
	if err := c.db.Ping(ctx); err != nil {
		c.logger.Warn("the store did not answer the metrics scrape", slog.String("error", err.Error()))
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	n, err := c.db.CountOutboxBacklog(ctx)
	if err != nil {
		c.logger.Warn("counting the outbox for metrics", slog.String("error", err.Error()))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(n))
	orphans, err := unconfiguredReady(ctx, c.db, c.tools())
	if err != nil {
		c.logger.Warn("counting ready executions for metrics", slog.String("error", err.Error()))
		return
	}
	for _, o := range orphans {
		ch <- prometheus.MustNewConstMetric(c.orphans, prometheus.GaugeValue, float64(o.Count), o.Tool)
	}
}

// unconfiguredReady returns the tools with executions ready to send that
// the configuration no longer names: the executor claims only configured
// tools, so these wait until the tool comes back or a human settles them.
func unconfiguredReady(ctx context.Context, db store.Store, tools map[string]bool) ([]store.ToolCount, error) {
	ready, err := db.ReadyByTool(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.ToolCount
	for _, r := range ready {
		if !tools[r.Tool] {
			out = append(out, r)
		}
	}
	return out, nil
}

// warnUnconfiguredReady says at start which tools have approved writes
// that nothing will send.
func warnUnconfiguredReady(ctx context.Context, db store.Store, tools map[string]bool, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, storeScrapeTimeout)
	defer cancel()
	orphans, err := unconfiguredReady(ctx, db, tools)
	if err != nil {
		logger.Warn("counting ready executions of tools no longer configured", slog.String("error", err.Error()))
		return
	}
	for _, o := range orphans {
		logger.Warn("approved writes wait for a tool that is no longer configured: nothing will send them until it is configured again or someone settles them",
			slog.String("tool", o.Tool), slog.Int("executions", o.Count))
	}
}

package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/prometheus/client_golang/prometheus"
)

// storeScrapeTimeout bounds the store reads of one scrape.
const storeScrapeTimeout = 2 * time.Second

// storeCollector reads, at each scrape, whether the store answers and how
// many Slack deliveries wait in the outbox: what the alert rules in
// deploy/prometheus watch. Read at scrape time, every replica reports the
// same backlog and its own view of the database.
type storeCollector struct {
	db      store.Store
	logger  *slog.Logger
	up      *prometheus.Desc
	backlog *prometheus.Desc
}

func newStoreCollector(db store.Store, logger *slog.Logger) prometheus.Collector {
	return &storeCollector{
		db: db, logger: logger,
		up: prometheus.NewDesc("countersign_database_up",
			"1 when the store answered a ping at this scrape, 0 when it did not.", nil, nil),
		backlog: prometheus.NewDesc("countersign_outbox_backlog",
			"Slack deliveries (cards, updates, thread replies) waiting to be delivered.", nil, nil),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.backlog
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
}

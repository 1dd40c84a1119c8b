package approvals

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pendingScrapeTimeout bounds the store read of one scrape.
const pendingScrapeTimeout = 2 * time.Second

// pendingCollector reads, at each scrape, how many requests of each
// configured tool wait for a decision and how long the oldest has waited
// (since its current round began). Reading at scrape time needs no
// process state, so every replica reports the same figures.
type pendingCollector struct {
	svc    *Service
	logger *slog.Logger
	count  *prometheus.Desc
	oldest *prometheus.Desc
}

// NewPendingCollector returns the collector of the pending requests'
// gauges; register it with the registry serve exports. A scrape while the
// store is out of reach leaves the gauges out and logs why.
func NewPendingCollector(svc *Service, logger *slog.Logger) prometheus.Collector {
	return &pendingCollector{
		svc: svc, logger: logger,
		count: prometheus.NewDesc("countersign_pending_requests",
			"Requests waiting for a decision, by tool.", []string{"tool"}, nil),
		oldest: prometheus.NewDesc("countersign_pending_oldest_age_seconds",
			"How long the longest-waiting pending request has waited since its round began, by tool (0 with none).", []string{"tool"}, nil),
	}
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.count
	ch <- c.oldest
}

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), pendingScrapeTimeout)
	defer cancel()
	counts, err := c.svc.DB.PendingByTool(ctx)
	if err != nil {
		c.logger.Warn("counting pending requests for metrics", slog.String("error", err.Error()))
		return
	}
	type figures struct {
		count int
		age   float64
	}
	byTool := make(map[string]figures, len(c.svc.CurrentTools()))
	for name := range c.svc.CurrentTools() {
		byTool[name] = figures{}
	}
	for _, p := range counts {
		if _, configured := byTool[p.Tool]; !configured {
			continue // a tool no longer configured: labels stay a fixed set
		}
		byTool[p.Tool] = figures{count: p.Count, age: max(p.Now.Sub(p.Oldest).Seconds(), 0)}
	}
	for tool, f := range byTool {
		ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(f.count), tool)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, f.age, tool)
	}
}

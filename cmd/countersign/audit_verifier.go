package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// auditVerifier runs audit verify inside serve, on retention.verify_schedule,
// and reports the last verified point: a log line and gauges an alert can
// watch. A walk reads every event, so it runs on its own schedule (daily
// suits most), never on the retention sweep's.
type auditVerifier struct {
	db       store.Store
	logger   *slog.Logger
	verified prometheus.Gauge
	intact   prometheus.Gauge
	at       prometheus.Gauge
	now      func() time.Time
}

func newAuditVerifier(db store.Store, logger *slog.Logger, reg prometheus.Registerer) *auditVerifier {
	v := &auditVerifier{db: db, logger: logger, now: time.Now,
		verified: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_audit_verified_events",
			Help: "Audit events the last verification found intact, up to the first that does not match.",
		}),
		intact: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_audit_intact",
			Help: "1 when the last verification found every checkpoint and chain intact, 0 when it named one.",
		}),
		at: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_audit_last_verified_timestamp_seconds",
			Help: "When the last verification of the audit trail finished.",
		}),
	}
	reg.MustRegister(v.verified, v.intact, v.at)
	return v
}

// runOnce verifies the audit trail and reports where it stands.
func (v *auditVerifier) runOnce(ctx context.Context) error {
	r, err := v.db.VerifyAudit(ctx)
	if err != nil {
		return err
	}
	v.verified.Set(float64(r.Events))
	v.at.Set(float64(v.now().Unix()))
	attrs := []any{slog.Int("events", r.Events), slog.Int("requests", r.Requests), slog.Int("checkpoints", r.Checkpoints)}
	if r.Last.ID != 0 {
		attrs = append(attrs, slog.Int64("last_event", r.Last.ID), slog.String("last_request", r.Last.RequestID),
			slog.Int("last_seq", r.Last.Seq))
	}
	switch {
	case r.BadCheckpoint != nil:
		v.intact.Set(0)
		v.logger.Error("the audit trail does not verify", append(attrs, slog.Int64("checkpoint", r.BadCheckpoint.ID),
			slog.String("problem", r.Problem))...)
	case r.Bad != nil:
		v.intact.Set(0)
		v.logger.Error("the audit trail does not verify", append(attrs, slog.Int64("event", r.Bad.ID),
			slog.String("problem", r.Problem))...)
	default:
		v.intact.Set(1)
		v.logger.Info("audit trail verified", attrs...)
	}
	return nil
}

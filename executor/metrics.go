package executor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// Metrics counts attempts and logical executions and times dispatch.
type Metrics struct {
	Attempts           *prometheus.CounterVec // every send, by outcome and code
	Executions         *prometheus.CounterVec // logical executions reaching a settled state, by outcome and code
	ClaimToDispatch    prometheus.Histogram
	ApprovalToDispatch prometheus.Histogram // first attempts only
	Unknown            prometheus.Gauge     // executions in unknown at the last reconcile
	NeedsReview        prometheus.Gauge     // executions in needs_review at the last reconcile
	StaleOutcomes      prometheus.Counter   // outcomes discarded because the claim had moved on
}

// NewMetrics registers the executor's metrics with reg; a nil reg leaves
// them unregistered.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	latency := []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30}
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_executor_attempts_total", Help: "Sends to providers, by outcome and code.",
		}, []string{"outcome", "code"}),
		Executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_executor_executions_total", Help: "Executions reaching succeeded, failed, superseded or needs_review, by outcome and code.",
		}, []string{"outcome", "code"}),
		ClaimToDispatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_executor_claim_to_dispatch_seconds", Help: "From a committed claim to the start of the send.",
			Buckets: latency,
		}),
		ApprovalToDispatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_executor_approval_to_dispatch_seconds", Help: "From the approval to the start of the first send.",
			Buckets: latency,
		}),
		Unknown: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_executor_unknown", Help: "Executions whose outcome is being verified.",
		}),
		NeedsReview: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_executor_needs_review", Help: "Executions waiting for a human.",
		}),
		StaleOutcomes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_executor_stale_outcomes_total", Help: "Outcomes not recorded because the claim was no longer the worker's.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Attempts, m.Executions, m.ClaimToDispatch, m.ApprovalToDispatch, m.Unknown, m.NeedsReview, m.StaleOutcomes)
	}
	return m
}

// codeLabel keeps the code label to a small fixed set: the executor's own
// codes and those its tools' senders know; anything else is "other".
func (e *Executor) codeLabel(code string) string {
	switch code {
	case "":
		return "none"
	case CodeExhausted, CodeSnapshotMismatch, CodeApprovalExpired, CodePrecondition, CodeClaimTimeout, CodeClaimTooShort,
		CodeNotDone, CodeUnverifiable, CodePolicyStricter, CodePolicyUnchecked, CodeExecuteChanged, "marked_succeeded", "marked_failed":
		return code
	}
	for _, t := range e.toolset.Load().tools {
		if _, known := t.Sender.Outcome(code); known {
			return code
		}
	}
	return "other"
}

// endsExecution reports whether a state ends a logical execution, for
// counting: the states that settle a request (store.Settled) and those that
// hand it to a new round or a person.
func endsExecution(s store.ExecState) bool {
	switch s {
	case store.ExecSucceeded, store.ExecFailed, store.ExecSuperseded, store.ExecNeedsReview:
		return true
	case store.ExecReady, store.ExecClaimed, store.ExecUnknown:
	}
	return false
}

package approvals

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// fatigueMetrics gives the bundle's service metrics on a registry of its
// own and pins its clock to *at.
func (b *bundle) fatigueMetrics(at *time.Time) (*Metrics, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	b.svc.Metrics = NewMetrics(reg)
	b.svc.Now = func() time.Time { return *at }
	return b.svc.Metrics, reg
}

// histogramOf reads a histogram's sample count and sum from reg.
func histogramOf(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("%s is not registered", name)
	return 0, 0
}

// postCard records the round's card on surface as posted now.
func (b *bundle) postCard(t *testing.T, req store.Request, surface string) store.Card {
	t.Helper()
	c, err := b.store.RecordCard(b.ctx, store.Card{RequestID: req.ID, Round: req.Round, Surface: surface,
		Ref: "C1/" + req.ID, RenderedState: "pending"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Human votes move the fatigue metrics: an approval cast 2 s after its card
// is a rubber stamp, one cast a minute after is not; an inbox vote (no card
// on its surface) is measured from its round's start; every decision is
// counted by source and verdict and timed from its round's start; approvals
// are counted by reviewer; a vote on a decided round counts nothing.
func TestHumanDecisionsMoveTheFatigueMetrics(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		base := time.Now()
		at := base
		m, reg := b.fatigueMetrics(&at)

		quick := b.submit(t, nil)
		card := b.postCard(t, quick, "slack")
		at = card.PostedAt.Add(2 * time.Second)
		if out, err := b.svc.Decide(b.ctx, approve(quick, approverA)); err != nil || !out.Created {
			t.Fatalf("quick approval = %+v, %v", out, err)
		}
		if got := testutil.ToFloat64(m.RubberStamps); got != 1 {
			t.Errorf("rubber stamps after an approval 2 s after the card = %v, want 1", got)
		}

		at = base
		slow := b.submit(t, &intentOpts{RunID: ptr("r-slow")})
		card = b.postCard(t, slow, "slack")
		at = card.PostedAt.Add(time.Minute)
		if out, err := b.svc.Decide(b.ctx, approve(slow, approverB)); err != nil || !out.Created {
			t.Fatalf("slow approval = %+v, %v", out, err)
		}
		if got := testutil.ToFloat64(m.RubberStamps); got != 1 {
			t.Errorf("rubber stamps after an approval a minute after the card = %v, want still 1", got)
		}
		if count, sum := histogramOf(t, reg, "countersign_time_to_decision_seconds"); count != 2 || sum < 60 || sum > 600 {
			t.Errorf("time to decision = %d samples summing %.1f s, want 2 summing about a minute", count, sum)
		}

		// The inbox posts no card: it shows a request as its round starts.
		at = base
		listed := b.submit(t, &intentOpts{RunID: ptr("r-inbox")})
		at = listed.RoundStartedAt.Add(time.Second)
		inboxVote := approve(listed, approverB)
		inboxVote.Via = "inbox"
		if out, err := b.svc.Decide(b.ctx, inboxVote); err != nil || !out.Created {
			t.Fatalf("inbox approval = %+v, %v", out, err)
		}
		if got := testutil.ToFloat64(m.RubberStamps); got != 2 {
			t.Errorf("rubber stamps after an inbox approval 1 s into its round = %v, want 2", got)
		}

		at = base.Add(30 * time.Second)
		refused := b.submit(t, &intentOpts{RunID: ptr("r-reject")})
		reject := approve(refused, approverA)
		reject.Verdict = store.VerdictReject
		if out, err := b.svc.Decide(b.ctx, reject); err != nil || !out.Created {
			t.Fatalf("reject = %+v, %v", out, err)
		}

		// A late click on a decided round changes nothing, and counts nothing.
		if out, err := b.svc.Decide(b.ctx, approve(quick, approverB)); err != nil || out.Created || out.Counted {
			t.Fatalf("a click on a decided round = %+v, %v", out, err)
		}

		for labels, want := range map[[2]string]float64{
			{SourceHuman, "approve"}: 3, {SourceHuman, "reject"}: 1, {SourcePolicy, "approve"}: 0, {SourceGrant, "approve"}: 0,
		} {
			if got := testutil.ToFloat64(m.Decisions.WithLabelValues(labels[0], labels[1])); got != want {
				t.Errorf("decisions %v = %v, want %v", labels, got, want)
			}
		}
		for reviewer, want := range map[string]float64{approverA: 1, approverB: 2} {
			if got := testutil.ToFloat64(m.ReviewerApprovals.WithLabelValues(reviewer)); got != want {
				t.Errorf("approvals by %s = %v, want %v (a reject is no approval)", reviewer, got, want)
			}
		}
		if count, _ := histogramOf(t, reg, "countersign_time_to_decision_seconds"); count != 4 {
			t.Errorf("time to decision samples = %d, want one per human decision, 4", count)
		}
		if got := testutil.ToFloat64(m.ShadowAllowed); got != 0 {
			t.Errorf("shadow-allowed approvals without a shadow rule = %v", got)
		}
	})
}

// A shadow tier decides nothing: the request waits for a human under the
// tool's own rule, with the same policy version as without the shadow; but
// its match is recorded on the request, in the requested event and in the
// policy verdicts metric, and the human approval that follows counts as one
// the shadow rule would have spared.
func TestShadowRuleIsRecordedAndDecidesNothing(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		at := time.Now()
		m, _ := b.fatigueMetrics(&at)
		tool := b.svc.Tools["billing.credit"]
		versionWithout := tool.PolicyVersion()
		tool.Tiers = []Tier{{Name: "small-credits", Shadow: true, Verdict: VerdictAllow,
			When: Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("5000")}}}
		b.svc.Tools["billing.credit"] = tool

		req := b.submit(t, nil) // 4200 cents: the shadow matches
		p := req.Policy
		if req.Status != store.RequestPending || p.Verdict != VerdictAsk || p.TierName != DefaultTierName || p.Tier != nil {
			t.Fatalf("request = %s, policy %+v; want pending under the tool's own rule", req.Status, p)
		}
		if len(p.Shadow) != 1 || p.Shadow[0] != (store.ShadowMatch{Tier: "small-credits", Verdict: VerdictAllow}) {
			t.Errorf("shadow on the request = %+v", p.Shadow)
		}
		if p.Version != versionWithout {
			t.Errorf("policy version %s, want %s: a shadow tier does not change it", p.Version, versionWithout)
		}
		if _, err := b.store.DecisionFor(b.ctx, req.ID, 1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("decision of a request only a shadow matched = %v, want none", err)
		}
		if queued, err := b.store.PostPending(b.ctx, req.ID, 1); err != nil || !queued {
			t.Errorf("card post queued = %v, %v; want a card as for any request", queued, err)
		}
		h, err := b.store.HistoryOf(b.ctx, req.ID)
		if err != nil || len(h.Events) != 1 || h.Events[0].Kind != store.EventRequested {
			t.Fatalf("history = %+v, %v; want the requested event alone", h.Events, err)
		}
		shadow, _ := json.Marshal(h.Events[0].Data["shadow"])
		if string(shadow) != `[{"tier":"small-credits","verdict":"allow"}]` {
			t.Errorf("requested event's shadow = %s", shadow)
		}

		b.submit(t, &intentOpts{RunID: ptr("r-big"), Effect: ptr(`{"invoice":"inv_9","amount_cents":9000,"currency":"USD"}`)})
		if got := testutil.ToFloat64(m.PolicyVerdicts.WithLabelValues("billing.credit", "small-credits", "allow", "true")); got != 1 {
			t.Errorf("shadow matches counted = %v, want 1 (the big credit does not match)", got)
		}
		if got := testutil.ToFloat64(m.PolicyVerdicts.WithLabelValues("billing.credit", DefaultTierName, "ask", "false")); got != 2 {
			t.Errorf("deciding rule counted = %v, want 2", got)
		}

		if out, err := b.svc.Decide(b.ctx, approve(req, approverA)); err != nil || !out.Created {
			t.Fatalf("approval = %+v, %v", out, err)
		}
		if got := testutil.ToFloat64(m.ShadowAllowed); got != 1 {
			t.Errorf("human approvals a shadow rule would have allowed = %v, want 1", got)
		}
		if got := testutil.ToFloat64(m.Decisions.WithLabelValues(SourceHuman, "approve")); got != 1 {
			t.Errorf("human approvals = %v, want 1", got)
		}
	})
}

// A policy's allow and deny are counted as policy decisions once each (a
// replay counts nothing), are not timed as human decisions, and their audit
// event says which rule decided, in words, with the policy's version.
func TestPolicyDecisionsAreCountedAndAudited(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		at := time.Now()
		m, reg := b.fatigueMetrics(&at)
		tool := b.svc.Tools["billing.credit"]
		tool.Tiers = []Tier{
			{Name: "small-credits", Verdict: VerdictAllow, When: Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("5000")}},
			{Name: "euro", Verdict: VerdictDeny, Deny: "euro credits go through treasury", When: Condition{Field: "currency", Op: OpEQ, Value: "EUR"}},
		}
		b.svc.Tools["billing.credit"] = tool

		allowed := b.submit(t, nil)
		if allowed.Status != store.RequestApproved {
			t.Fatalf("a small credit is %s, want approved by policy", allowed.Status)
		}
		denied := newIntent(&intentOpts{RunID: ptr("r-eur"), Effect: ptr(`{"invoice":"inv_2","amount_cents":9000,"currency":"EUR"}`)})
		for range 2 { // the post and its replay
			var de *DeniedError
			if _, _, err := b.svc.Submit(b.ctx, "billing-agent", denied); !errors.As(err, &de) {
				t.Fatalf("a euro credit = %v, want denied by policy", err)
			}
		}
		for labels, want := range map[[2]string]float64{
			{SourcePolicy, "approve"}: 1, {SourcePolicy, "reject"}: 1, {SourceHuman, "approve"}: 0,
		} {
			if got := testutil.ToFloat64(m.Decisions.WithLabelValues(labels[0], labels[1])); got != want {
				t.Errorf("decisions %v = %v, want %v", labels, got, want)
			}
		}
		if count, _ := histogramOf(t, reg, "countersign_time_to_decision_seconds"); count != 0 {
			t.Errorf("time to decision samples = %d, want none: no human decided", count)
		}
		if n := testutil.CollectAndCount(m.ReviewerApprovals); n != 0 {
			t.Errorf("reviewers with approvals = %d, want none", n)
		}

		deniedReq, err := b.store.RequestByKey(b.ctx, mustKey(t, denied))
		if err != nil {
			t.Fatal(err)
		}
		for req, want := range map[string]string{
			allowed.ID:   "allowed by policy rule small-credits",
			deniedReq.ID: "denied by policy rule euro: euro credits go through treasury",
		} {
			h, err := b.store.HistoryOf(b.ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]any
			for _, ev := range h.Events {
				if ev.Kind == store.EventDecided {
					data = ev.Data
				}
			}
			if data["policy"] != want || data["policy_version"] != tool.PolicyVersion() {
				t.Errorf("decided event = %v, want policy %q at version %s", data, want, tool.PolicyVersion())
			}
		}
	})
}

// mustKey is the key an intent is stored under.
func mustKey(t *testing.T, in Intent) string {
	t.Helper()
	key, _, err := Derive(in.Basis())
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func TestPolicyDecisionText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    store.Policy
		want string
	}{
		{store.Policy{Verdict: VerdictAllow, TierName: "small"}, "allowed by policy rule small"},
		{store.Policy{Verdict: VerdictDeny, TierName: "wires", Deny: "no wires"}, "denied by policy rule wires: no wires"},
		{store.Policy{Verdict: VerdictDeny, TierName: "wires"}, "denied by policy rule wires"},
		{store.Policy{Verdict: VerdictAsk, TierName: "default"}, ""},
	} {
		if got := PolicyDecisionText(c.p); got != c.want {
			t.Errorf("PolicyDecisionText(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
	for via, want := range map[string]string{ViaPolicy: SourcePolicy, ViaGrant: SourceGrant, "slack": SourceHuman, "inbox": SourceHuman} {
		if got := DecisionSource(via); got != want {
			t.Errorf("DecisionSource(%q) = %q, want %q", via, got, want)
		}
	}
}

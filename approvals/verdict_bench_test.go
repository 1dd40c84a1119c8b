package approvals

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fiveTiers is a policy a platform team might write first: a deny, an
// allow, a shadow rule and two asks, all in CEL. The benchmark's effect
// (4200 USD) matches none of them, so every tier is evaluated and the
// write asks, as it does without a policy: the store's work is the same.
func fiveTiers(tb testing.TB) []Tier {
	tier := func(name, when string, t Tier) Tier {
		e, err := CompileExpression(when)
		if err != nil {
			tb.Fatal(err)
		}
		t.Name, t.When = name, e
		return t
	}
	return []Tier{
		tier("blocked", `effect.invoice in ["inv_blocked_1", "inv_blocked_2"]`, Tier{Verdict: VerdictDeny, Deny: "blocked invoice"}),
		tier("tiny", `effect.amount_cents < 100 && effect.currency == "USD"`, Tier{Verdict: VerdictAllow}),
		tier("would-allow", `effect.amount_cents <= 2000`, Tier{Verdict: VerdictAllow, Shadow: true}),
		tier("big", `effect.amount_cents > 100000`, Tier{Approvals: 2}),
		tier("foreign", `effect.currency != "USD" && agent != "billing-agent"`, Tier{Approvals: 2}),
	}
}

// BenchmarkSubmitPolicy is new-intent intake (group-committed, as serve
// runs it) to a tool without a policy and to the same tool with five CEL
// tiers, the two interleaved in every goroutine of one run so the load of
// a shared machine falls on both alike. It reports each one's p99 and mean
// latency and the ratios, policy/plain (docs/BENCHMARKS.md: p99 within 1.10).
func BenchmarkSubmitPolicy(b *testing.B) {
	bundle := setup(b)
	plain := bundle.svc.Tools["billing.credit"]
	policed := plain
	policed.Name, policed.Tiers = "billing.policed", fiveTiers(b)
	bundle.svc.Tools = map[string]Tool{plain.Name: plain, policed.Name: policed}
	var n atomic.Int64
	var mu sync.Mutex
	var took [2][]time.Duration // plain, policed
	b.SetParallelism(4)         // 4 × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			kind := int(i % 2)
			run, tool := fmt.Sprintf("bench-%d", i), []string{plain.Name, policed.Name}[kind]
			start := time.Now()
			req, created, err := bundle.svc.Submit(bundle.ctx, "billing-agent", newIntent(&intentOpts{RunID: &run, Tool: &tool}))
			if err != nil || !created || req.Policy.Verdict != VerdictAsk {
				b.Fatalf("created %v, policy %+v: %v", created, req.Policy, err)
			}
			d := time.Since(start)
			mu.Lock()
			took[kind] = append(took[kind], d)
			mu.Unlock()
		}
	})
	b.StopTimer()
	if len(took[0]) < 2 || len(took[1]) < 2 {
		return
	}
	p99 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[(len(ds)*99)/100])
	}
	mean := func(ds []time.Duration) float64 {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		return float64(sum) / float64(len(ds))
	}
	plainP99, policedP99 := p99(took[0]), p99(took[1])
	b.ReportMetric(plainP99/1e3, "plain-p99-µs")
	b.ReportMetric(policedP99/1e3, "policy-p99-µs")
	b.ReportMetric(policedP99/plainP99, "p99-policy/plain")
	b.ReportMetric(mean(took[1])/mean(took[0]), "mean-policy/plain")
}

// BenchmarkPolicyEvaluate is the five tiers alone on the billing.credit
// effect: what the policy adds to each intent's CPU.
func BenchmarkPolicyEvaluate(b *testing.B) {
	tool := Tool{Name: "billing.policed", Approvers: []string{"U1"}, Tiers: fiveTiers(b)}
	effect := []byte(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		in, err := NewPolicyInput(effect, tool.Name, "billing-agent", "U0ANA", now)
		if err != nil {
			b.Fatal(err)
		}
		if ev := tool.Evaluate(in); ev.Policy.Verdict != VerdictAsk {
			b.Fatalf("policy = %+v", ev.Policy)
		}
	}
}

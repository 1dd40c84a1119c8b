package approvals

import (
	"encoding/json"
	"testing"
)

func TestConditionComparesNumbersExactly(t *testing.T) {
	t.Parallel()
	over := func(v string) Condition { return Condition{Field: "amount_cents", Op: OpGT, Value: json.Number(v)} }
	for _, tc := range []struct {
		name   string
		when   Condition
		effect string
		want   bool
	}{
		{"at the boundary", over("100000"), `{"amount_cents":100000}`, false},
		{"one past the boundary", over("100000"), `{"amount_cents":100001}`, true},
		{"gte at the boundary", Condition{Field: "amount_cents", Op: OpGTE, Value: json.Number("100000")}, `{"amount_cents":100000}`, true},
		{"decimal form of the boundary", over("100000"), `{"amount_cents":100000.0}`, false},
		{"exponent form past it", over("100000"), `{"amount_cents":1.00001e5}`, true},
		// float64 cannot tell these apart: both are 9007199254740992.
		{"huge integers one apart", over("9007199254740992"), `{"amount_cents":9007199254740993}`, true},
		{"huge integers equal", over("9007199254740993"), `{"amount_cents":9007199254740993}`, false},
		{"beyond 64 bits", over("123456789012345678901234567890"), `{"amount_cents":123456789012345678901234567891}`, true},
		{"missing field", over("100000"), `{"amount":100001}`, false},
		{"missing field never matches ne", Condition{Field: "currency", Op: OpNE, Value: "USD"}, `{}`, false},
		{"a string is not a number", over("1"), `{"amount_cents":"100001"}`, false},
		{"lt", Condition{Field: "amount_cents", Op: OpLT, Value: json.Number("10")}, `{"amount_cents":9.99}`, true},
		{"lte", Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("10")}, `{"amount_cents":10.01}`, false},
		{"eq number by value", Condition{Field: "n", Op: OpEQ, Value: json.Number("100")}, `{"n":1e2}`, true},
		{"eq string", Condition{Field: "currency", Op: OpEQ, Value: "EUR"}, `{"currency":"EUR"}`, true},
		{"ne string", Condition{Field: "currency", Op: OpNE, Value: "EUR"}, `{"currency":"USD"}`, true},
		{"eq bool", Condition{Field: "refund", Op: OpEQ, Value: true}, `{"refund":true}`, true},
		{"in", Condition{Field: "customer.tier", Op: OpIn, Value: []any{"gold", json.Number("3")}}, `{"customer":{"tier":"gold"}}`, true},
		{"in number", Condition{Field: "customer.tier", Op: OpIn, Value: []any{"gold", json.Number("3")}}, `{"customer":{"tier":3.0}}`, true},
		{"not in", Condition{Field: "customer.tier", Op: OpIn, Value: []any{"gold"}}, `{"customer":{"tier":"silver"}}`, false},
		{"dotted path through an array", Condition{Field: "lines.1.qty", Op: OpGT, Value: json.Number("5")}, `{"lines":[{"qty":1},{"qty":6}]}`, true},
		{"path past a scalar", Condition{Field: "amount_cents.value", Op: OpGT, Value: json.Number("5")}, `{"amount_cents":6}`, false},
	} {
		if got := tc.when.MatchesEffect([]byte(tc.effect)); got != tc.want {
			t.Errorf("%s: %+v on %s = %v, want %v", tc.name, tc.when, tc.effect, got, tc.want)
		}
	}
}

func TestConditionValidateRefusesWhatCannotBeEvaluated(t *testing.T) {
	t.Parallel()
	for _, c := range []Condition{
		{Field: "amount", Op: "gtt", Value: json.Number("1")},
		{Field: "", Op: OpGT, Value: json.Number("1")},
		{Field: "a..b", Op: OpGT, Value: json.Number("1")},
		{Field: "amount", Op: OpGT, Value: "big"},
		{Field: "amount", Op: OpIn, Value: "gold"},
		{Field: "amount", Op: OpEQ, Value: []any{"gold"}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := (Condition{Field: "amount", Op: OpIn, Value: []any{"a"}}).Validate(); err != nil {
		t.Errorf("a valid in: %v", err)
	}
}

func TestPolicyForTakesTheFirstMatchingTier(t *testing.T) {
	t.Parallel()
	tool := Tool{Approvers: []string{"U1", "U2"}, Tiers: []Tier{
		{When: Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("1000000")}, Approvals: 3, Approvers: []string{"S0CFO"}},
		{When: Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("100000")}, Approvals: 2},
	}}
	base := tool.PolicyFor([]byte(`{"amount_cents":100000}`))
	if base.Approvals != 1 || base.Tier != nil || len(base.Approvers) != 2 {
		t.Errorf("no tier: %+v", base)
	}
	second := tool.PolicyFor([]byte(`{"amount_cents":100001}`))
	if second.Approvals != 2 || second.Tier == nil || *second.Tier != 1 || len(second.Approvers) != 2 {
		t.Errorf("second tier: %+v", second)
	}
	first := tool.PolicyFor([]byte(`{"amount_cents":5000000}`))
	if first.Approvals != 3 || first.Tier == nil || *first.Tier != 0 || first.Approvers[0] != "S0CFO" {
		t.Errorf("first tier: %+v", first)
	}
}

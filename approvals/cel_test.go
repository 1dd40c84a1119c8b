package approvals

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var celNow = time.Date(2026, 3, 2, 15, 30, 0, 0, time.UTC)

func mustExpression(t testing.TB, source string) *Expression {
	t.Helper()
	e, err := CompileExpression(source)
	if err != nil {
		t.Fatalf("compiling %q: %v", source, err)
	}
	return e
}

func celInput(t testing.TB, effect string) PolicyInput {
	t.Helper()
	in, err := NewPolicyInput([]byte(effect), "billing.credit", "billing-agent", "U0ANA", celNow)
	if err != nil {
		t.Fatalf("effect %s: %v", effect, err)
	}
	return in
}

func TestExpressionMatches(t *testing.T) {
	t.Parallel()
	const small = `effect.amount_cents <= 5000 && effect.currency == "USD"`
	for _, tc := range []struct {
		name, when, effect string
		want               bool
	}{
		{"integer under", small, `{"amount_cents":4200,"currency":"USD"}`, true},
		{"decimal under", small, `{"amount_cents":42.5,"currency":"USD"}`, true},
		{"decimal form of the boundary", small, `{"amount_cents":5000.0,"currency":"USD"}`, true},
		{"exponent form of the boundary", small, `{"amount_cents":5e3,"currency":"USD"}`, true},
		{"one over", small, `{"amount_cents":5001,"currency":"USD"}`, false},
		{"other currency", small, `{"amount_cents":1,"currency":"EUR"}`, false},
		{"a string is not a number", small, `{"amount_cents":"1","currency":"USD"}`, false},
		{"beyond 64 bits is a double", `effect.amount_cents > 5000`, `{"amount_cents":123456789012345678901234567890}`, true},
		{"a whole decimal equals an int", `effect.amount_cents == 5000`, `{"amount_cents":5000.00}`, true},
		{"missing field", small, `{"currency":"USD"}`, false},
		{"missing field, negated", `!(effect.amount_cents > 5000)`, `{}`, false},
		{"missing field is not forgiven by ||", `effect.amount_cents > 5000 || tool == "billing.credit"`, `{}`, false},
		{"missing field is not forgiven by &&", `effect.amount_cents > 5000 && tool == "other"`, `{}`, false},
		{"has guards a field", `!has(effect.amount_cents) || effect.amount_cents < 10`, `{}`, true},
		{"has guards a present field", `!has(effect.amount_cents) || effect.amount_cents < 10`, `{"amount_cents":11}`, false},
		{"nested map", `effect.customer.tier == "gold"`, `{"customer":{"tier":"gold"}}`, true},
		{"nested map lacks the field", `effect.customer.tier == "gold"`, `{"customer":{}}`, false},
		{"not a map", `effect.customer.tier == "gold"`, `{"customer":"gold"}`, false},
		{"list membership", `"refund" in effect.tags`, `{"tags":["vip","refund"]}`, true},
		{"list comprehension", `effect.lines.all(l, l.amount_cents < 100)`, `{"lines":[{"amount_cents":5},{"amount_cents":99.5}]}`, true},
		{"list comprehension, one item lacks the field", `effect.lines.all(l, l.amount_cents < 100)`, `{"lines":[{"amount_cents":5},{}]}`, false},
		{"bool", `effect.urgent == true`, `{"urgent":true}`, true},
		{"null", `effect.note == null`, `{"note":null}`, true},
		{"division by zero", `effect.amount_cents / 0 == 1`, `{"amount_cents":1}`, false},
		{"tool, agent and person", `tool == "billing.credit" && agent == "billing-agent" && requested_for == "U0ANA"`, `{}`, true},
		{"the time", `now.getHours() < 18 && now > timestamp("2026-01-01T00:00:00Z")`, `{}`, true},
		{"an empty effect is a map", `size(effect) == 0`, `{}`, true},
		{"an effect that is not an object", `size(effect) == 0`, `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := mustExpression(t, tc.when)
			if got := e.Matches(celInput(t, tc.effect)); got != tc.want {
				_, err := e.Evaluate(celInput(t, tc.effect))
				t.Errorf("%s on %s = %v, want %v (error: %v)", tc.when, tc.effect, got, tc.want, err)
			}
			if e.Source() != tc.when {
				t.Errorf("Source = %q", e.Source())
			}
		})
	}
}

func TestExpressionRefusedAtLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, when   string
		want         string
		line, column int
	}{
		{"empty", "  ", "the expression is empty", 0, 0},
		{"an int", `effect.amount_cents + 1`, "returns int, not a bool", 0, 0},
		{"a field alone", `effect.urgent`, "returns dyn, not a bool; compare the field with a value", 0, 0},
		{"a syntax error, with its place", "effect.a == 1 &&\n  effect.b ==", "Syntax error", 2, 14},
		{"an unknown variable", `amount_cents > 5`, "undeclared reference to 'amount_cents'", 1, 1},
		{"a type error", `tool > 5`, "found no matching overload", 1, 6},
		{"too long", strings.Repeat("true && ", 600) + "true", "expression code point size exceeds limit", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := CompileExpression(tc.when)
			var ee *ExpressionError
			if !errors.As(err, &ee) || !strings.Contains(ee.Problem, tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
			if tc.line != 0 && (ee.Line != tc.line || ee.Column != tc.column) {
				t.Errorf("at line %d column %d, want %d:%d", ee.Line, ee.Column, tc.line, tc.column)
			}
		})
	}
}

// A pathological expression is refused at load when its worst case is
// beyond bounds, and stopped by the cost limit when only the effect makes
// it expensive.
func TestPathologicalExpressions(t *testing.T) {
	t.Parallel()
	t.Run("a comprehension inside another over the effect is refused", func(t *testing.T) {
		t.Parallel()
		for _, when := range []string{
			`effect.lines.all(a, effect.lines.all(b, a == b))`,
			`effect.lines.exists(a, effect.tags.exists(b, effect.notes.exists(c, a == b && b == c)))`,
			`effect.lines.map(a, effect.lines.map(b, b)).size() > 0`,
		} {
			_, err := CompileExpression(when)
			if err == nil || !strings.Contains(err.Error(), "avoid a comprehension") {
				t.Errorf("%s: error = %v, want refused for its cost", when, err)
			}
		}
	})
	t.Run("deep nesting is refused", func(t *testing.T) {
		t.Parallel()
		when := strings.Repeat("(", 300) + "true" + strings.Repeat(")", 300)
		if _, err := CompileExpression(when); err == nil {
			t.Error("300 nested parentheses compiled")
		}
	})
	t.Run("expensive calls are stopped by the cost limit", func(t *testing.T) {
		t.Parallel()
		e := mustExpression(t, `[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39].all(i, !effect.note.contains("overdue"))`)
		if !e.Matches(celInput(t, `{"note":"paid"}`)) {
			t.Fatal("a short note does not match")
		}
		long := `{"note":"` + strings.Repeat("a", 500_000) + `"}`
		matched, err := e.Evaluate(celInput(t, long))
		if matched || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
			t.Errorf("matched %v, error %v; want stopped by the cost limit", matched, err)
		}
	})
	// Nested comprehensions over literals, and a long pass over a huge
	// effect, are stopped by the cost limit or by the time limit, whichever
	// comes first (cel-go's cost tracking slows as a comprehension grows).
	for name, tc := range map[string]struct{ when, effect string }{
		"literal lists nested past the limit": {
			when: func() string {
				items := make([]string, 200)
				for i := range items {
					items[i] = fmt.Sprint(i)
				}
				list := "[" + strings.Join(items, ",") + "]"
				return fmt.Sprintf("%s.all(x, %s.all(y, %s.all(z, x + y + z >= 0)))", list, list, list)
			}(),
			effect: `{}`,
		},
		"a pass over a huge effect": {
			when:   `effect.lines.all(l, l != 1 && l != 2 && l != 3 && l != 4 && l != 5)`,
			effect: `{"lines":[` + strings.TrimSuffix(strings.Repeat("0,", 200_000), ",") + `]}`,
		},
	} {
		t.Run(name+" is stopped", func(t *testing.T) {
			t.Parallel()
			e := mustExpression(t, tc.when)
			in := celInput(t, tc.effect)
			start := time.Now()
			matched, err := e.Evaluate(in)
			took := time.Since(start)
			if matched || err == nil || !strings.Contains(err.Error(), "cost limit exceeded") && !strings.Contains(err.Error(), "deadline exceeded") {
				t.Errorf("matched %v, error %v; want stopped by a limit", matched, err)
			}
			if took > 20*CELTimeLimit {
				t.Errorf("stopped after %v", took)
			}
		})
	}
}

// fuzzedRules are evaluated against every fuzzed effect; reads lists the
// fields each reads whatever their values, so an effect lacking one of
// them must never match.
var fuzzedRules = []struct {
	when  string
	reads []string
}{
	{`effect.amount_cents <= 5000 && effect.currency == "USD"`, []string{"amount_cents", "currency"}},
	{`effect.amount_cents > 5000 || effect.currency != "USD"`, []string{"amount_cents", "currency"}},
	{`!(effect.amount_cents > 100)`, []string{"amount_cents"}},
	{`effect.amount_cents in [1, 2, 3.5, "4"]`, []string{"amount_cents"}},
	{`effect.customer.tier == "gold" || tool == "billing.credit"`, []string{"customer.tier"}},
	{`effect.lines.exists(l, l.sku == "X") || agent == "billing-agent"`, []string{"lines"}},
	{`size(effect.note) < 10 || true`, []string{"note"}},
	{`effect.flag == true || requested_for == "U0ANA"`, []string{"flag"}},
	{`effect.tags.all(t, t != "x") && now > timestamp("2000-01-01T00:00:00Z")`, []string{"tags"}},
	{`effect.amount_cents / effect.count > 2 || !has(effect.zzz)`, []string{"amount_cents", "count"}},
	{`!has(effect.amount_cents) || effect.amount_cents < 1`, nil},
	{`effect.a.b.c == null || size(effect) > 0`, []string{"a.b.c"}},
}

func FuzzCELEvaluation(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `null`, `1`, `"s"`,
		`{"amount_cents":4200,"currency":"USD"}`,
		`{"amount_cents":5000.0,"currency":"EUR","count":0}`,
		`{"amount_cents":1e400,"currency":"USD","count":1}`,
		`{"amount_cents":-9223372036854775809,"count":-1}`,
		`{"amount_cents":"4","customer":{"tier":"gold"},"note":"hi","flag":true}`,
		`{"customer":"gold","lines":[{"sku":"X"},{"sku":1},null],"tags":["x",1,{}]}`,
		`{"a":{"b":{"c":null}},"note":[1,2],"flag":"true"}`,
		`{"amount_cents":null,"currency":null,"tags":"x","lines":{"sku":"X"}}`,
	} {
		f.Add([]byte(seed))
	}
	rules := make([]*Expression, len(fuzzedRules))
	for i, r := range fuzzedRules {
		rules[i] = mustExpression(f, r.when)
	}
	f.Fuzz(func(t *testing.T, effect []byte) {
		in, err := NewPolicyInput(effect, "billing.credit", "billing-agent", "U0ANA", celNow)
		if err != nil {
			return // intake refuses what does not decode
		}
		for i, e := range rules {
			matched := e.Matches(in) // must not panic
			if !matched {
				continue
			}
			if _, isObject := in.Effect.(map[string]any); !isObject {
				t.Errorf("%s matched an effect that is not an object: %s", e.Source(), effect)
			}
			for _, field := range fuzzedRules[i].reads {
				if _, found := lookupPath(in.Effect, field); !found {
					t.Errorf("%s matched %s, which lacks %s", e.Source(), effect, field)
				}
			}
		}
	})
}

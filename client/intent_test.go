package client_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/client"
)

// Key refuses, as the hook does, a number RFC 8785 would write as another
// value, naming it by its JSON Pointer; an exact number keys as RFC 8785
// writes it.
func TestKeyRefusesInexactNumbers(t *testing.T) {
	t.Parallel()
	lines := func(amount any) map[string]any {
		return map[string]any{"invoice": "inv_1", "lines": []any{map[string]any{"amount": 1}, map[string]any{"amount": amount}}}
	}
	for name, tt := range map[string]struct {
		intent  client.Intent
		pointer string
	}{
		"a decimal past 2^53":    {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(json.Number("9007199254740993.0"))}, "/effect/lines/1/amount"},
		"an exponent":            {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: json.RawMessage(`{"lines":[{},{"amount":12345678901234567891e0}]}`)}, "/effect/lines/1/amount"},
		"an underflow":           {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(json.Number("1e-400"))}, "/effect/lines/1/amount"},
		"a subnormal that is 0":  {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(json.Number("2.4e-324"))}, "/effect/lines/1/amount"},
		"5,000 digits":           {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(json.Number("0." + strings.Repeat("1", 5000)))}, "/effect/lines/1/amount"},
		"a Go integer past 2^53": {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(uint64(9007199254740993))}, "/effect/lines/1/amount"},
		"a step past 2^53":       {client.Intent{RunID: "r", Step: int64(9007199254740993), Tool: "t", Effect: map[string]any{}}, "/step"},
		"a member name with /":   {client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: map[string]any{"a/b": json.Number("1e-400")}}, "/effect/a~1b"},
	} {
		key, err := client.Key(tt.intent)
		if err == nil || !strings.Contains(err.Error(), " at "+tt.pointer+" ") {
			t.Errorf("%s: Key = %q, %v; want a refusal naming %s", name, key, err, tt.pointer)
		}
	}

	// 1.0, 1e2, -0 and Go's float64 0.1 keep their value: each keys as the
	// number RFC 8785 writes for it.
	for written, canonical := range map[any]string{
		json.Number("1.0"): "1", json.Number("1e2"): "100", json.Number("-0"): "0", json.Number("-0.0"): "0",
		0.1: "0.1", json.Number("0.30000000000000004"): "0.30000000000000004", json.Number("1e21"): "1e+21",
	} {
		got, err := client.Key(client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(written)})
		want, wantErr := client.Key(client.Intent{RunID: "r", Step: 1, Tool: "t", Effect: lines(json.Number(canonical))})
		if err != nil || wantErr != nil || got != want {
			t.Errorf("%v: Key = %s, %v; want %s, the key of %s", written, got, err, want, canonical)
		}
	}
}

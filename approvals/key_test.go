package approvals

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestKeyPublishedVector(t *testing.T) {
	t.Parallel()
	got, err := Key(Basis{
		RunID:  "r-7f3a",
		Step:   json.RawMessage(`6`),
		Tool:   "billing.credit",
		Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
	if got != want {
		t.Fatalf("Key = %s, want %s", got, want)
	}
	if short := ShortKey(got); short != "wa_d0290121a…634c" {
		t.Fatalf("ShortKey = %s", short)
	}
}

// The expected keys below were computed independently with Python's
// json.dumps(basis, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
// which equals JCS for these inputs.
func TestKeyCrossCheckedVectors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		run    string
		step   string
		tool   string
		effect string
		want   string
	}{
		{"unicode strings", "r-ü", `1`, "crm.note", `{"text": "Grüße, 世界 🎉", "émoji": "✓"}`,
			"wa_f0dc222d3dee7f7d70c0b763680f8b36fdff67c35fb24ffe7cd9d12d2c2c2125"},
		{"nested objects and arrays", "run-2", `3`, "deploy.release",
			`{"service": "api", "targets": [{"region": "eu-west-1", "replicas": 3}, {"region": "us-east-1", "replicas": 2}], "meta": {"b": {"y": 1, "x": 2}, "a": []}}`,
			"wa_1e5b8983e5bd939c74729c48c8414444c1e09814f531cbc6dbc1dbb143034f4b"},
		{"a float", "run-3", `1`, "billing.credit", `{"amount": 12.5, "rate": 0.1}`,
			"wa_6168fb4988a60430f2faa67993793d7b03b24144ac9365c0c83caec0ee5055a2"},
		{"step as string", "r-7f3a", `"6"`, "billing.credit", `{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}`,
			"wa_70ebb0aa22f7520884978e26ab1868a209d310ca74816139ab9bcb8fe72e56b9"},
		{"key order in the input", "r-7f3a", `6`, "billing.credit", `{"currency": "USD", "amount_cents": 4200, "invoice": "inv_8841"}`,
			"wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"},
		{"booleans and null", "run-5", `2`, "flags.set", `{"enabled": true, "previous": null, "negative": -7}`,
			"wa_809b2f510aa1375b6e5765df0d68fce40af3beea86fec1ec8e6843ab91335eb4"},
		{"whitespace and escapes in the input", "r-7f3a", `6`, "billing.credit",
			"{ \"invoice\" : \"inv\\u005f8841\",\n \"amount_cents\" : 4200 , \"currency\":\"USD\" }",
			"wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Key(Basis{RunID: tt.run, Step: json.RawMessage(tt.step), Tool: tt.tool, Effect: json.RawMessage(tt.effect)})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Key = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestKeyIgnoresNothingInTheBasis(t *testing.T) {
	t.Parallel()
	base := Basis{RunID: "r", Step: json.RawMessage(`1`), Tool: "t", Effect: json.RawMessage(`{"a":1}`)}
	k0, _ := Key(base)
	variants := []Basis{
		{RunID: "r2", Step: base.Step, Tool: base.Tool, Effect: base.Effect},
		{RunID: base.RunID, Step: json.RawMessage(`"1"`), Tool: base.Tool, Effect: base.Effect},
		{RunID: base.RunID, Step: base.Step, Tool: "t2", Effect: base.Effect},
		{RunID: base.RunID, Step: base.Step, Tool: base.Tool, Effect: json.RawMessage(`{"a":2}`)},
	}
	for i, v := range variants {
		k, err := Key(v)
		if err != nil {
			t.Fatal(err)
		}
		if k == k0 {
			t.Errorf("variant %d gives the same key as the base", i)
		}
	}
}

func TestCanonicalizeSnapshot(t *testing.T) {
	t.Parallel()
	got, err := Canonicalize([]byte(`{"b": 1.50, "a": "x\ny", "c": 1e3}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x\ny","b":1.5,"c":1000}`; string(got) != want {
		t.Fatalf("Canonicalize = %s, want %s", got, want)
	}
	if h := PayloadHash(got); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Fatalf("PayloadHash = %s", h)
	}
}

func TestValidClientKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]bool{
		"abcdefgh":                true,
		"abcdefg":                 false,
		strings.Repeat("k", 255):  true,
		strings.Repeat("k", 256):  false,
		"order-1234 retry":        true,
		"tab\there-123":           false,
		"ключ-12345":              false,
		"dispatch:inv_8841:42000": true,
	} {
		if got := ValidClientKey(key); got != want {
			t.Errorf("ValidClientKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// A basis that carries its effect's canonical form gives the same bytes as
// one canonicalized whole.
func TestCanonicalWithCanonicalEffectIsTheSame(t *testing.T) {
	for _, b := range []Basis{
		{RunID: "r", Step: json.RawMessage(`1`), Tool: "t", Effect: json.RawMessage(`{"b": 2, "a": [1.0, "é\u00e9"]}`)},
		{RunID: "run \"7\"\n", Step: json.RawMessage(`"step-\u0041"`), Tool: "billing.credit", Effect: json.RawMessage(`{}`)},
		{RunID: "ü€😀", Step: json.RawMessage(`-42`), Tool: "<t>&", Effect: json.RawMessage(`{"z":{"y":1e21,"x":null}}`)},
		{RunID: "\x01\x1f\x7f\u2028\b\f\r\t/", Step: json.RawMessage(`"\u2028\u0007\\"`), Tool: "t", Effect: json.RawMessage(`{"a":1}`)},
		{RunID: "r", Step: json.RawMessage(`-0`), Tool: "t", Effect: json.RawMessage(`{"a":1}`)},
		{RunID: "r", Step: json.RawMessage(`9007199254740992`), Tool: "t", Effect: json.RawMessage(`{"a":1}`)},
	} {
		whole, err := b.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if b.CanonicalEffect, err = Canonicalize(b.Effect); err != nil {
			t.Fatal(err)
		}
		spliced, err := b.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if string(spliced) != string(whole) {
			t.Errorf("spliced %s, whole %s", spliced, whole)
		}
	}
}

// FuzzCanonicalBasis checks the key basis written directly (run, step and
// tool spliced after the effect's canonical form) against the RFC 8785
// library on the whole basis, for any run, tool and step.
func FuzzCanonicalBasis(f *testing.F) {
	f.Add("r-7f3a", "6", "billing.credit")
	f.Add("ü€😀\x00\u2028", `"step \"6\""`, "<t>&")
	f.Add("r", "-9007199254740992", "t")
	f.Add("r", "1e3", "t")
	f.Fuzz(func(t *testing.T, run, step, tool string) {
		b := Basis{RunID: run, Step: json.RawMessage(step), Tool: tool, Effect: json.RawMessage(`{"b":[1.5,"x"],"a":null}`)}
		whole, err := b.Canonical()
		if err != nil {
			return // not a step DecodeIntent would accept
		}
		if b.CanonicalEffect, err = Canonicalize(b.Effect); err != nil {
			t.Fatal(err)
		}
		spliced, err := b.Canonical()
		if err != nil {
			t.Fatalf("the spliced basis fails where the whole succeeds: %v", err)
		}
		if string(spliced) != string(whole) {
			t.Errorf("spliced %q, whole %q", spliced, whole)
		}
	})
}

package intentkey

import (
	"encoding/json"
	"errors"
	"github.com/countersign/countersign/internal/intentkey/intentkeytest"
	"testing"

	"github.com/gowebpki/jcs"
)

// Every implementation of the key passes testdata/key-vectors.json: each
// intent there keys as listed, and each refused one names the number's JSON
// Pointer. The first vectors' keys were also computed independently with
// Python's json.dumps(basis, sort_keys=True, separators=(",", ":"),
// ensure_ascii=False), which equals RFC 8785 for them.
func TestKeyVectors(t *testing.T) {
	t.Parallel()
	vectors := intentkeytest.Load(t)
	type fields struct {
		RunID  string          `json:"run_id"`
		Step   json.RawMessage `json:"step"`
		Tool   string          `json:"tool"`
		Effect json.RawMessage `json:"effect"`
	}
	for _, v := range vectors.Keys {
		var in fields
		if err := json.Unmarshal(v.Intent, &in); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if err := CheckNumbers(v.Intent, ""); err != nil {
			t.Errorf("%s: CheckNumbers = %v", v.Name, err)
		}
		got, err := Key(Basis{RunID: in.RunID, Step: in.Step, Tool: in.Tool, Effect: in.Effect})
		if err != nil || got != v.Key {
			t.Errorf("%s: key = %s, %v; want %s", v.Name, got, err, v.Key)
		}
	}
	for _, v := range vectors.Refused {
		var n *NumberError
		if err := CheckNumbers(v.Intent, ""); !errors.As(err, &n) || n.Pointer != v.Pointer {
			t.Errorf("%s: CheckNumbers = %v; want a *NumberError at %s", v.Name, err, v.Pointer)
		}
	}
}

func TestShort(t *testing.T) {
	t.Parallel()
	if got := Short("wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"); got != "wa_d0290121a…634c" {
		t.Fatalf("Short = %s", got)
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
		if b.CanonicalEffect, err = jcs.Transform(b.Effect); err != nil {
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
		if b.CanonicalEffect, err = jcs.Transform(b.Effect); err != nil {
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

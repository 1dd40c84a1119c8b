package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzDecodeIntent feeds untrusted bytes to the intake decoder. Whatever it
// accepts must be valid JSON whose effect canonicalizes and keys
// deterministically; whatever it refuses must be an *InputError with a code.
func FuzzDecodeIntent(f *testing.F) {
	for _, seed := range []string{
		vectorBody,
		`{"run_id":"r","step":"6","tool":"t","effect":{}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":[1,2,{"b":null}],"c":1.5e3}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":1,"a":2}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":12345678901234567890}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"\u00e9":"\ud83c\udf89"}}`,
		`[]`, `{`, `null`, `{"run_id":"r"} x`,
		`{"a":{"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"q":16,"r":17,"b":18}}`,
		`{"a\u0062":1,"ab":2}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"n":-9007199254740993,"f":1e400,"g":-0.0,"h":1E-400}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{},"summary":"a\u0000b"}`,
		`{"run_id":"r","step":"\u0000","tool":"t","effect":{}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":[{"b\u0000":"\u0000"}]}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":"\\u0000"},"reason":"\\u0000"}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{},"idempotency_key":" wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{},"idempotency_key":"WA_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{},"idempotency_key":"dispatch:inv_8841/1+2=~.-"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeIntent(body)
		if err != nil {
			var input *InputError
			if !errors.As(err, &input) || (input.Code != CodeMalformedJSON && input.Code != CodeInvalidRequest) || input.Message == "" {
				t.Fatalf("refusal %v is not an InputError with a stable code", err)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(in.Effect) == 0 || in.Effect[0] != '{' || in.RunID == "" || in.Tool == "" || len(in.Step) == 0 {
			t.Fatalf("accepted an intent without its basis: %+v", in)
		}
		if in.IdempotencyKey != "" && CheckClientKeyForm(in.IdempotencyKey) != nil {
			t.Fatalf("accepted client key %q outside the rule", in.IdempotencyKey)
		}
		var step, effect any
		if err := json.Unmarshal(in.Step, &step); err != nil {
			t.Fatalf("accepted step %s does not decode: %v", in.Step, err)
		}
		if err := json.Unmarshal(in.Effect, &effect); err != nil {
			t.Fatalf("accepted effect does not decode: %v", err)
		}
		for _, v := range []any{in.RunID, in.Tool, in.Summary, in.Reason, in.RequestedFor, in.IdempotencyKey, step, effect} {
			if holdsNUL(v) {
				t.Fatalf("accepted U+0000 in %q of %+v", v, in)
			}
		}
		snapshot, err := Canonicalize(in.Effect)
		if err != nil {
			t.Fatalf("accepted effect does not canonicalize: %v", err)
		}
		again, err := Canonicalize(snapshot)
		if err != nil || !bytes.Equal(again, snapshot) {
			t.Fatalf("canonical form is not stable: %s then %s", snapshot, again)
		}
		k1, err1 := Key(in.Basis())
		k2, err2 := Key(Basis{RunID: in.RunID, Step: in.Step, Tool: in.Tool, Effect: snapshot})
		if err1 != nil || err2 != nil || k1 != k2 {
			t.Fatalf("key depends on the effect's formatting: %s %v, %s %v", k1, err1, k2, err2)
		}
	})
}

// holdsNUL reports whether a decoded JSON value has U+0000 in any string or
// member name.
func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.ContainsRune(v, 0)
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for name, e := range v {
			if strings.ContainsRune(name, 0) || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}

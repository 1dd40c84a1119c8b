package strictjson

import (
	"encoding/json"
	"fmt"
	"testing"
	"unicode/utf8"
)

// FuzzCheck feeds untrusted bytes to Check. Its fast scan and its token
// walk must give the same answer for every UTF-8 body, and whatever it
// accepts must be valid JSON.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		`{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit", "effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}}`,
		`{"run_id":"r","step":"6","tool":"t","effect":{}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":[1,2,{"b":null}],"c":1.5e3}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":1,"a":2}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"a":12345678901234567890}}`,
		`{"run_id":"r","step":1,"tool":"t","effect":{"\u00e9":"\ud83c\udf89"}}`,
		`[]`, `{`, `null`, `{"run_id":"r"} x`,
		`{"a":{"b":1,"c":2,"d":3,"e":4,"f":5,"g":6,"h":7,"i":8,"j":9,"k":10,"l":11,"m":12,"n":13,"o":14,"p":15,"q":16,"r":17,"b":18}}`,
		`{"a\u0062":1,"ab":2}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"n":-9007199254740993,"f":1e400,"g":-0.0,"h":1E-400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, tokens := Check(body), checkJSONTokens(body)
		if fmt.Sprint(fast) != fmt.Sprint(tokens) && utf8.Valid(body) {
			t.Fatalf("Check says %v, the token walk %v", fast, tokens)
		}
		if fast == nil && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}

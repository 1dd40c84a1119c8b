package approvals

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refsIn lists every $ref value in a JSON document.
func refsIn(v any) []string {
	var refs []string
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if s, ok := child.(string); ok && k == "$ref" {
				refs = append(refs, s)
			}
			refs = append(refs, refsIn(child)...)
		}
	case []any:
		for _, child := range v {
			refs = append(refs, refsIn(child)...)
		}
	}
	return refs
}

// A schema that names files beside it is served as one document, every
// $ref inside it, and checks effects as the files did.
func TestEffectSchemaIsBundled(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/bundle/refund.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := CompileEffectSchema("shop.refund", raw, "testdata/bundle")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := decodeSchema(s.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	refs := refsIn(doc)
	if len(refs) != 5 {
		t.Errorf("refs = %v, want the 5 of the three files", refs)
	}
	for _, ref := range refs {
		if !strings.HasPrefix(ref, "#/") {
			t.Errorf("$ref %q leaves the document", ref)
		}
	}
	defs := doc["$defs"].(map[string]any)
	for _, name := range []string{"order_id", "common", "common_2", "address"} {
		if defs[name] == nil {
			t.Errorf("$defs lacks %s: %v", name, defs)
		}
	}
	if !strings.Contains(string(s.JSON()), `"maximum":9007199254740993`) {
		t.Errorf("a bound lost its digits: %s", s.JSON())
	}
	if strings.Contains(string(s.JSON()), "schemas.example.com") {
		t.Errorf("a bundled file kept its $id: %s", s.JSON())
	}

	// The bundle alone, compiled with no file beside it, checks the same.
	alone, err := CompileEffectSchema("shop.refund", s.JSON(), t.TempDir())
	if err != nil {
		t.Fatalf("the bundle does not compile on its own: %v", err)
	}
	for _, tc := range []struct {
		effect string
		field  string // "" when valid
	}{
		{`{"order":"ord_1","amount":{"cents":100,"currency":"USD"},"ship_to":{"country":"DE"}}`, ""},
		{`{"order":"ord_1","amount":{"cents":100,"currency":"GBP"},"ship_to":{"country":"DE"}}`, "/effect/amount/currency"},
		{`{"order":"ord_1","amount":{"cents":0,"currency":"USD"},"ship_to":{"country":"DE"}}`, "/effect/amount/cents"},
		{`{"order":"x","amount":{"cents":1,"currency":"USD"},"ship_to":{"country":"DE"}}`, "/effect/order"},
		{`{"order":"ord_1","amount":{"cents":1,"currency":"USD"},"ship_to":{"country":"DE","price_floor":{"cents":1,"currency":"XXX"}}}`, "/effect/ship_to/price_floor/currency"},
	} {
		for name, schema := range map[string]*EffectSchema{"from files": s, "bundle alone": alone} {
			err := schema.Check([]byte(tc.effect))
			var input *InputError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("%s: %s refused: %v", name, tc.effect, err)
			case tc.field != "" && (!errors.As(err, &input) || input.Field != tc.field):
				t.Errorf("%s: %s = %v, want invalid_effect at %s", name, tc.effect, err, tc.field)
			}
		}
	}
}

// What cannot be bundled fails at start, naming the reference.
func TestEffectSchemaBundlingRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"type":`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ schema, want string }{
		{`{"$ref": "https://schemas.example.com/money.json"}`, "nothing over the network"},
		{`{"$ref": "missing.json"}`, "missing.json"},
		{`{"$ref": "broken.json"}`, "not JSON"},
		{`{"$ref": "#anchor"}`, "JSON-pointer fragments"},
	} {
		_, err := CompileEffectSchema("t", []byte(tc.schema), dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one saying %q", tc.schema, err, tc.want)
		}
	}
	if _, err := CompileEffectSchema("t", []byte(`{"$ref":"#/$defs/x","$defs":{"x":{"type":"string"}}}`), dir); err != nil {
		t.Errorf("a schema with only local refs: %v", err)
	}
}

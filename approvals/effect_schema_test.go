package approvals

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/countersign/countersign/store/drivertest"
)

// creditSchema is the billing.credit effect as a JSON Schema (the hook's
// tests read the same file).
var creditSchema = mustRead("testdata/credit.schema.json")

func mustRead(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func mustSchema(t testing.TB, raw string) *EffectSchema {
	t.Helper()
	s, err := CompileEffectSchema("billing.credit", []byte(raw), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withSchema gives billing.credit the credit schema on b's service.
func (b *bundle) withSchema(t testing.TB) {
	t.Helper()
	tool := b.svc.Tools["billing.credit"]
	tool.EffectSchema = mustSchema(t, creditSchema)
	b.svc.Tools = map[string]Tool{"billing.credit": tool, "deploy.release": b.svc.Tools["deploy.release"]}
}

// A tool's schema never changes the key: the same intent gets the same key
// with and without one, and it is the published vector.
func TestEffectSchemaDoesNotChangeTheKey(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		without, with := setupWith(t, d), setupWith(t, d)
		with.withSchema(t)
		a, _, err := without.svc.Submit(without.ctx, "billing-agent", newIntent(nil))
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := with.svc.Submit(with.ctx, "billing-agent", newIntent(nil))
		if err != nil {
			t.Fatal(err)
		}
		const vector = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"
		if a.Key != vector || b.Key != vector || a.BasisHash != b.BasisHash || string(a.Snapshot) != string(b.Snapshot) {
			t.Fatalf("without a schema %s %s, with one %s %s", a.Key, a.BasisHash, b.Key, b.BasisHash)
		}
	})
}

func TestCompileEffectSchemaRefusesABadSchema(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"not JSON":         `{"type":`,
		"not an object":    `["type"]`,
		"unknown type":     `{"type":"integr"}`,
		"a ref to nowhere": `{"$ref":"missing.json"}`,
		"a bad minimum":    `{"minimum":"one"}`,
		"a bad regex":      `{"pattern":"("}`,
		"a remote ref":     `{"$ref":"https://example.com/schema.json"}`,
	} {
		if _, err := CompileEffectSchema("t", []byte(raw), t.TempDir()); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

// FuzzEffectSchemaCheck checks that any effect bytes either pass or are
// refused as invalid_request or invalid_effect naming a path in the effect,
// never a panic or another error.
func FuzzEffectSchemaCheck(f *testing.F) {
	f.Add([]byte(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`))
	f.Add([]byte(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD","lines":[{"qty":1}]}`))
	f.Add([]byte(`{"a~b/c":1}`))
	f.Add([]byte(`[1,2`))
	schema := mustSchema(f, creditSchema)
	f.Fuzz(func(t *testing.T, effect []byte) {
		err := schema.Check(effect)
		if err == nil {
			return
		}
		var input *InputError
		if !errors.As(err, &input) || (input.Code != CodeInvalidEffect && input.Code != CodeInvalidRequest) || !strings.HasPrefix(input.Field, "/effect") && input.Field != "effect" {
			t.Fatalf("Check(%q) = %v", effect, err)
		}
	})
}

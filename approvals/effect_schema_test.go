package approvals

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/drivertest"
)

// creditSchema is the billing.credit effect as a JSON Schema.
const creditSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["invoice", "amount_cents", "currency"],
  "additionalProperties": false,
  "properties": {
    "invoice": {"type": "string", "pattern": "^inv_[0-9]+$"},
    "amount_cents": {"type": "integer", "minimum": 1, "maximum": 1000000},
    "currency": {"enum": ["USD", "EUR"]},
    "lines": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}}
  }
}`

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

// An effect that fails the schema is refused 422 invalid_effect naming the
// failing path and the reason, and nothing is stored.
func TestEffectSchemaRefusalNamesThePath(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		b := setupWith(t, d)
		b.withSchema(t)
		for _, tc := range []struct {
			effect, path, reason string
		}{
			{`{"invoice":"inv_8841","amount_cents":0,"currency":"USD"}`, "/effect/amount_cents", "minimum"},
			{`{"invoice":"inv_8841","amount_cents":"4200","currency":"USD"}`, "/effect/amount_cents", "want integer"},
			{`{"invoice":"inv_8841","currency":"USD"}`, "/effect/amount_cents", "missing propert"},
			{`{"invoice":"bill 8841","amount_cents":4200,"currency":"USD"}`, "/effect/invoice", "does not match pattern"},
			{`{"invoice":"inv_8841","amount_cents":4200,"currency":"GBP"}`, "/effect/currency", "value must be one of"},
			{`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD","lines":[{"sku":"a"},{"qty":2}]}`, "/effect/lines/1/sku", "missing propert"},
			{`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD","note":"x"}`, "/effect", "additional properties 'note'"},
		} {
			body := `{"run_id":"r-schema","step":1,"tool":"billing.credit","effect":` + tc.effect + `}`
			resp, got := post(t, b, body)
			if resp.StatusCode != http.StatusUnprocessableEntity || got.Error.Code != CodeInvalidEffect {
				t.Errorf("%s: %d %+v, want 422 invalid_effect", tc.effect, resp.StatusCode, got.Error)
				continue
			}
			if got.Error.Field != tc.path || !strings.Contains(got.Error.Message, tc.path) || !strings.Contains(got.Error.Message, tc.reason) {
				t.Errorf("%s: field %q, message %q; want the path %s and %q", tc.effect, got.Error.Field, got.Error.Message, tc.path, tc.reason)
			}
		}
		b.expectCounts(t, map[string]int{
			`SELECT count(*) FROM requests`: 0,
			`SELECT count(*) FROM events`:   0,
			`SELECT count(*) FROM outbox`:   0,
		})
		// The same tool takes an effect that satisfies its schema.
		if resp, got := post(t, b, `{"run_id":"r-schema","step":1,"tool":"billing.credit","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("a valid effect answered %d %+v", resp.StatusCode, got.Error)
		}
	})
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

// post sends an intent body to b's hook and decodes the answer.
func post(t *testing.T, b *bundle, body string) (*http.Response, errorBody) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.server.URL+"/v1/requests", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got errorBody
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil && !errors.Is(err, http.ErrBodyNotAllowed) {
		t.Fatal(err)
	}
	return resp, got
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

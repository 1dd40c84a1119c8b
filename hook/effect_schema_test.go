package hook

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// creditSchema is the billing.credit effect as a JSON Schema, the one
// approvals' tests use.
var creditSchema = func() string {
	b, err := os.ReadFile("../approvals/testdata/credit.schema.json")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func mustSchema(t testing.TB, raw string) *approvals.EffectSchema {
	t.Helper()
	s, err := approvals.CompileEffectSchema("billing.credit", []byte(raw), "")
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
	b.svc.Tools = map[string]approvals.Tool{"billing.credit": tool, "deploy.release": b.svc.Tools["deploy.release"]}
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
			if resp.StatusCode != http.StatusUnprocessableEntity || got.Error.Code != approvals.CodeInvalidEffect {
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

// post sends an intent body to b's hook and decodes the answer.
func post(t *testing.T, b *bundle, body string) (*http.Response, wire.ErrorBody) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.server.URL+"/v1/requests", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got wire.ErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil && !errors.Is(err, http.ErrBodyNotAllowed) {
		t.Fatal(err)
	}
	return resp, got
}

// GET /v1/tools serves a schema that names files beside it as one document:
// an MCP runtime can take it as a tool's input schema as it is.
func TestToolListServesBundledSchemas(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, d)
		raw, err := os.ReadFile("../approvals/testdata/bundle/refund.json")
		if err != nil {
			t.Fatal(err)
		}
		schema, err := approvals.CompileEffectSchema("billing.credit", raw, "../approvals/testdata/bundle")
		if err != nil {
			t.Fatal(err)
		}
		tool := b.svc.Tools["billing.credit"]
		tool.EffectSchema = schema
		b.svc.Tools = map[string]approvals.Tool{"billing.credit": tool, "deploy.release": b.svc.Tools["deploy.release"]}
		r := b.do(t, http.MethodGet, "/v1/tools", testToken, nil, nil)
		var list struct {
			Tools []struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"effect_schema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK {
			t.Fatalf("= %d %s", r.status, r.body)
		}
		for _, tl := range list.Tools {
			if tl.Name != "billing.credit" {
				continue
			}
			refs := regexp.MustCompile(`"\$ref":"([^"]*)"`).FindAllStringSubmatch(string(tl.Schema), -1)
			if len(refs) == 0 {
				t.Fatalf("no $ref served at all: %s", tl.Schema)
			}
			for _, ref := range refs {
				if !strings.HasPrefix(ref[1], "#/") {
					t.Errorf("served $ref %q leaves the document", ref[1])
				}
			}
			if !strings.Contains(string(tl.Schema), `"money"`) {
				t.Errorf("common.json's money is not bundled: %s", tl.Schema)
			}
			return
		}
		t.Fatalf("billing.credit not listed: %s", r.body)
	})
}

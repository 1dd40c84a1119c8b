package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/embedded"
)

var (
	apiDocOnce sync.Once
	apiDoc     *apitest.Document
)

// conforming wraps the hook so that every answer it gives in this package's
// tests is checked against the OpenAPI document.
func conforming(t testing.TB, h http.Handler) http.Handler {
	t.Helper()
	return apitest.Conform(t, document(t), nil, h)
}

// document is the hook's OpenAPI document, parsed once.
func document(t testing.TB) *apitest.Document {
	t.Helper()
	apiDocOnce.Do(func() { apiDoc = apitest.Load(t, openAPIDocument) })
	if apiDoc == nil {
		t.Fatal("the OpenAPI document did not load")
	}
	return apiDoc
}

// The document describes exactly the routes the hook serves, and exactly the
// error codes of the one vocabulary (RefusalCodes): a new route or code fails
// here until the document has it.
func TestOpenAPIDocumentCoversEveryRouteAndCode(t *testing.T) {
	t.Parallel()
	doc := document(t)
	served := NewHandler(nil, nil, nil, nil, nil).Operations()
	if len(served) < 5 || !slices.Equal(served, doc.Operations()) {
		t.Errorf("the hook serves %v, the document describes %v", served, doc.Operations())
	}
	codes := slices.Sorted(slices.Values(approvals.RefusalCodes()))
	if documented := slices.Sorted(slices.Values(doc.ErrorCodes())); !slices.Equal(codes, documented) {
		t.Errorf("RefusalCodes are %v, the document's ErrorCode is %v", codes, documented)
	}
}

// The hook answers what the document promises, each promised answer at
// least once: every operation, every status, every error code of each. A
// response or an accepted request that does not match the document fails
// the test as it happens (apitest.Conform), here and in every hook test of
// this package.
func TestOpenAPIConformance(t *testing.T) {
	t.Parallel()
	b := setup(t)
	grant := b.grant(t, 0) // before the schema's configuration, which has no grants
	b.withSchema(t)
	b.withVerdicts()
	down := closedStoreHook(t, b.answers)

	created := b.post(t, vectorBody)
	replay := b.post(t, vectorBody)
	if created.status != http.StatusCreated || replay.status != http.StatusOK {
		t.Fatalf("create %d, replay %d", created.status, replay.status)
	}
	key := created.view(t).Key
	for _, call := range []struct {
		method, path, token, body string
		header                    map[string]string
	}{
		{"POST", "/v1/requests", testToken, `{"run_id":`, nil},
		{"POST", "/v1/requests", "wrong", vectorBody, nil},
		{"POST", "/v1/requests", testToken, vectorBody, map[string]string{"Idempotency-Key": key[:20]}},
		{"POST", "/v1/requests", testToken, vectorBody, map[string]string{"Idempotency-Key": "client-key-0001"}},
		{"POST", "/v1/requests", testToken, strings.Replace(vectorBody, "4200", "4300", 1), map[string]string{"Idempotency-Key": "client-key-0001"}},
		{"POST", "/v1/requests", testToken, strings.Replace(vectorBody, "4200", "4300", 1), map[string]string{"Idempotency-Key": key}},
		{"POST", "/v1/requests", testToken, vectorBody, map[string]string{"Content-Type": "text/plain"}},
		{"POST", "/v1/requests", testToken, `{"run_id":"r","step":1,"tool":"billing.credit","effect":[]}`, nil},
		{"POST", "/v1/requests", testToken, `{"run_id":"r","step":1,"tool":"billing.credit","effect":{"invoice":"x"}}`, nil},
		{"POST", "/v1/requests", testToken, `{"run_id":"r","step":1,"tool":"db.drop","effect":{}}`, nil},
		{"POST", "/v1/requests", testToken, strings.Repeat(" ", approvals.MaxBodyBytes+1), nil},
		{"POST", "/v1/requests", testToken, strings.Replace(vectorBody, `"inv_8841"`, `"inv_0"`, 1), nil},
		{"GET", "/v1/requests/" + key, testToken, "", nil},
		{"GET", "/v1/requests/" + key + "?wait=1ms", testToken, "", nil},
		{"GET", "/v1/requests/" + key + "?wait=forever", testToken, "", nil},
		{"GET", "/v1/requests/" + key, "wrong", "", nil},
		{"GET", "/v1/requests/wa_nothing", testToken, "", nil},
		{"POST", "/v1/requests/" + key + "/cancel", "wrong", "", nil},
		{"POST", "/v1/requests/wa_nothing/cancel", testToken, "", nil},
		{"POST", "/v1/requests/" + key + "/cancel", testToken, "", nil},
		{"POST", "/v1/requests/" + key + "/cancel", testToken, "", nil},
		{"GET", "/v1/requests?limit=1", testToken, "", nil},
		{"GET", "/v1/requests?limit=0", testToken, "", nil},
		{"GET", "/v1/requests", "wrong", "", nil},
		{"GET", "/v1/tools", testToken, "", nil},
		{"GET", "/v1/tools", "", "", nil},
		{"GET", "/v1/openapi.json", "", "", nil},
		{"GET", "/.well-known/jwks.json", "", "", nil},
	} {
		b.do(t, call.method, call.path, call.token, strings.NewReader(call.body), call.header)
	}
	// The request was cancelled above (and another denied); pruned, its key
	// answers 410.
	if n, err := b.store.Prune(context.Background(), store.PruneParams{Before: time.Now().Add(time.Minute)}); err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if got := b.post(t, vectorBody); got.status != http.StatusGone {
		t.Errorf("replay of a pruned key = %d %s", got.status, got.body)
	}
	for _, call := range []struct{ method, path string }{
		{"POST", "/v1/requests"}, {"GET", "/v1/requests"}, {"GET", "/v1/requests/" + key}, {"POST", "/v1/requests/" + key + "/cancel"},
	} {
		if got := down.do(t, call.method, call.path, testToken, strings.NewReader(vectorBody), nil); got.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s on a closed store = %d", call.method, call.path, got.status)
		}
	}

	// Redrive needs an agent with a callback (billing-agent, testToken) and
	// one without (other-agent, otherToken).
	cb := setupCallbacks(t, &drivertest.Postgres)
	pending := cb.post(t, vectorBody).view(t)
	for _, call := range []struct{ path, token string }{
		{"/v1/requests/" + pending.Key + "/redrive", testToken},
		{"/v1/requests/" + pending.Key + "/cancel", testToken},
		{"/v1/requests/" + pending.Key + "/redrive", testToken},
		{"/v1/requests/" + pending.Key + "/redrive", "wrong"},
		{"/v1/requests/wa_nothing/redrive", testToken},
	} {
		cb.do(t, http.MethodPost, call.path, call.token, nil, nil)
	}
	other := cb.do(t, http.MethodPost, "/v1/requests", otherToken, strings.NewReader(vectorBodyOther), nil).view(t)
	cb.do(t, http.MethodPost, "/v1/requests/"+other.Key+"/redrive", otherToken, nil, nil)
	if got := down.do(t, http.MethodPost, "/v1/requests/"+key+"/redrive", testToken, nil, nil); got.status != http.StatusServiceUnavailable {
		t.Errorf("redrive on a closed store = %d %s", got.status, got.body)
	}

	// The admin routes: an admin lists and revokes, anyone else finds no
	// such route, and a closed store is 503.
	for _, call := range []struct{ method, path, token string }{
		{"GET", "/v1/grants", adminToken},
		{"GET", "/v1/grants", testToken},
		{"GET", "/v1/grants", "wrong"},
		{"POST", "/v1/grants/" + grant.ID + "/revoke", adminToken},
		{"POST", "/v1/grants/" + grant.ID + "/revoke", testToken},
		{"POST", "/v1/grants/nosuchgrant/revoke", adminToken},
		{"POST", "/v1/grants/" + grant.ID + "/revoke", "wrong"},
	} {
		b.do(t, call.method, call.path, call.token, nil, nil)
	}
	for _, call := range []struct{ method, path string }{{"GET", "/v1/grants"}, {"POST", "/v1/grants/x/revoke"}} {
		if got := down.do(t, call.method, call.path, adminToken, nil, nil); got.status != http.StatusServiceUnavailable {
			t.Errorf("%s %s on a closed store = %d %s", call.method, call.path, got.status, got.body)
		}
	}

	// The outcome of a write the agent performs itself: recorded, the same
	// again, another, and each refusal.
	b.withAgentTool(t, 0)
	payout := b.approvedPayout(t, 1)
	outcome := "/v1/requests/" + payout.Key + "/outcome"
	dispatched := b.post(t, strings.Replace(vectorBody, `"step": 6`, `"step": 61`, 1)).view(t)
	for _, call := range []struct {
		path, token, body string
		header            map[string]string
	}{
		{outcome, testToken, `{"status":"succeeded","provider_ref":"po_1"}`, nil},
		{outcome, testToken, `{"status":"succeeded","provider_ref":"po_1"}`, nil},
		{outcome, testToken, `{"status":"failed","detail":"declined"}`, nil},
		{outcome, testToken, `{"status":`, nil},
		{outcome, testToken, `{"status":"done"}`, nil},
		{outcome, testToken, `{"status":"failed"}`, map[string]string{"Content-Type": "text/plain"}},
		{outcome, testToken, `{"detail":"` + strings.Repeat("x", 20<<10) + `"}`, nil},
		{outcome, "wrong", `{"status":"failed"}`, nil},
		{"/v1/requests/wa_nothing/outcome", testToken, `{"status":"failed"}`, nil},
		{"/v1/requests/" + dispatched.Key + "/outcome", testToken, `{"status":"failed"}`, nil},
	} {
		b.do(t, http.MethodPost, call.path, call.token, strings.NewReader(call.body), call.header)
	}
	if got := down.do(t, http.MethodPost, outcome, testToken, strings.NewReader(`{"status":"failed"}`), nil); got.status != http.StatusServiceUnavailable {
		t.Errorf("outcome on a closed store = %d %s", got.status, got.body)
	}

	// The gateway's routes: a read passes through, and each refusal.
	b.handler.SetGateway(&fixedGateway{})
	for _, call := range []struct {
		method, path, token, body string
		header                    map[string]string
	}{
		{"GET", "/v1/gateway/tools", testToken, "", nil},
		{"GET", "/v1/gateway/tools", "wrong", "", nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"fs__read_text_file","arguments":{"path":"/a"}}`, nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"fs__write_file","arguments":{"path":"/a"}}`, nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"fs__nothing"}`, nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"down__read"}`, nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":`, nil},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"fs__read_text_file"}`, map[string]string{"Content-Type": "text/plain"}},
		{"POST", "/v1/gateway/call", testToken, `{"tool":"fs__read_text_file","arguments":"` + strings.Repeat("x", approvals.MaxBodyBytes) + `"}`, nil},
		{"POST", "/v1/gateway/call", "wrong", `{"tool":"fs__read_text_file"}`, nil},
	} {
		b.do(t, call.method, call.path, call.token, strings.NewReader(call.body), call.header)
	}
	// The permission hooks (pretooluse_test.go).
	exerciseToolHooks(t, b)

	seen := b.answers.Seen()
	maps.Copy(seen, cb.answers.Seen())
	for _, promised := range document(t).Promised() {
		// No input provokes an internal error on the hook; its body is the
		// same Error as every other refusal.
		// A range (4XX) is the envelope's promise for a route with no
		// input to refuse.
		if promised.Code == approvals.CodeInternal || promised.Status == 0 {
			continue
		}
		if !seen[promised] {
			t.Errorf("the document promises %s, and nothing answered it", promised)
		}
	}
}

// The document served is the one in the repository, to anyone.
func TestOpenAPIDocumentIsServedWithoutAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got := b.do(t, http.MethodGet, "/v1/openapi.json", "", nil, nil)
	onDisk, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.status != http.StatusOK || !bytes.Equal(got.body, onDisk) || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json = %d %s, %d bytes", got.status, got.header.Get("Content-Type"), len(got.body))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(got.body, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi %q, %v", doc.OpenAPI, err)
	}
}

// The conformance check catches a response the document does not describe,
// such as a field it does not know: that is how a new field surfaces.
func TestConformanceCatchesAnUndocumentedField(t *testing.T) {
	t.Parallel()
	doc := document(t)
	bad := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tools": []any{map[string]any{
			"name": "t", "reversible": false, "policy": map[string]any{"approvals": 1, "approvers": []string{"U1"}}, "surprise": true}}})
	})
	spy := &failures{TB: t}
	server := httptest.NewServer(apitest.Conform(spy, doc, nil, bad))
	defer server.Close()
	resp, err := http.Get(server.URL + "/v1/tools")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if spy.count.Load() == 0 {
		t.Fatal("a tool with an undocumented field passed the conformance check")
	}
}

// failures counts the errors reported through it instead of failing.
type failures struct {
	testing.TB
	count atomic.Int64
}

func (f *failures) Errorf(string, ...any) { f.count.Add(1) }

// closedStoreHook is a hook whose embedded store has been closed, as at
// shutdown: every call that needs the ledger answers 503.
func closedStoreHook(t *testing.T, answers *apitest.Recorder) *bundle {
	t.Helper()
	s, err := embedded.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(t, approvals.Config{DB: store.NewLedger(s, store.Options{}), Tools: map[string]approvals.Tool{"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour}}, Logger: logger})
	sum := sha256.Sum256([]byte(testToken))
	agent, err := ParseAgent("billing-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	agent.Callback = true
	notifier, _, _ := s.Notifier(logger)
	server := httptest.NewServer(apitest.Conform(t, document(t), answers, NewHandler(svc, Agents{agent, adminAgent(t)}, notifier, logger, NewMetrics(prometheus.NewRegistry()))))
	t.Cleanup(server.Close)
	s.Close()
	return &bundle{server: server}
}

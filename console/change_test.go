package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
)

// withTool reconfigures billing.credit as change says.
func (b *bundle) withTool(change func(*approvals.Tool)) {
	tools := maps.Clone(b.svc.CurrentTools())
	tool := tools[toolName]
	change(&tool)
	tools[toolName] = tool
	b.svc.Reconfigure(tools, nil)
}

func (b *bundle) submitEffect(t *testing.T, tool, effect string) store.Request {
	t.Helper()
	in := approvalstest.Intent(&approvalstest.IntentOpts{Effect: &effect})
	in.RunID = fmt.Sprintf("r-change-%d-%d", time.Now().UnixNano(), runs.Add(1))
	in.Tool, in.RequestedFor = tool, requester
	return approvalstest.Submit(t, b.svc, "billing-agent", in)
}

func (b *bundle) recordPreview(t *testing.T, p store.Preview) {
	t.Helper()
	ctx := context.Background()
	if ok, err := b.store.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: p.RequestID, StaleBefore: time.Now().Add(-time.Hour)}); err != nil || !ok {
		t.Fatalf("ClaimPreview = %v, %v", ok, err)
	}
	if ok, err := b.store.RecordPreview(ctx, p); err != nil || !ok {
		t.Fatalf("RecordPreview = %v, %v", ok, err)
	}
}

// A request's page shows what its write changes, as the tool's preview
// said: field by field before and after, escaped, its misleading text
// flagged.
func TestRequestPageShowsThePreview(t *testing.T) {
	b := setup(t)
	b.withTool(func(tool *approvals.Tool) {
		tool.Preview = &approvals.PreviewEndpoint{URL: "https://previews.example.com", Timeout: time.Second}
		tool.BusinessID = "invoice"
	})
	req := b.submit(t, toolName, "credit")
	b.recordPreview(t, store.Preview{RequestID: req.ID, State: store.PreviewReady, Changes: []store.PreviewChange{
		{Field: "balance_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "memo", Before: json.RawMessage(`"<script>alert(1)</script>"`), After: json.RawMessage(`"p\u0430id"`)},
	}})
	br := b.browser(t)
	br.login("alice@example.com")
	resp, page := br.get(Prefix + "/requests/" + req.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the request page answered %d", resp.StatusCode)
	}
	for _, want := range []string{`id="preview-changes"`,
		`<tr><td><code>balance_cents</code></td><td class="before">1000</td><td class="after">5200</td></tr>`,
		`<td class="before">&lt;script&gt;alert(1)&lt;/script&gt;</td><td class="after">pаid</td>`,
		`preview/changes/1/after mixes scripts in &#34;pаid&#34;`} {
		if !strings.Contains(page, want) {
			t.Errorf("the request page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, `id="previous`) {
		t.Error("the page shows the preview unescaped, or the comparison beside a preview")
	}

	// A failed preview says so, and the page compares instead.
	failed := b.submit(t, toolName, "credit again")
	b.recordPreview(t, store.Preview{RequestID: failed.ID, State: store.PreviewFailed, Reason: "the preview endpoint answered 500"})
	_, page = br.get(Prefix + "/requests/" + failed.ID)
	for _, want := range []string{`id="preview-unavailable">Preview unavailable: the preview endpoint answered 500.`,
		`<code class="short-key" title="` + req.Key + `">` + approvals.ShortKey(req.Key) + `</code>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the failed preview's page lacks %q:\n%s", want, page)
		}
	}
}

// Without a preview, a request's page shows the difference from the latest
// earlier request of the same tool with the same business id, naming its
// short key and state; a request with no earlier one says so.
func TestRequestPageShowsTheDifferenceFromThePreviousRequest(t *testing.T) {
	b := setup(t)
	b.withTool(func(tool *approvals.Tool) { tool.BusinessID = "invoice" })
	first := b.submitEffect(t, toolName, `{"invoice":"inv_1","amount_cents":4200,"currency":"USD","lines":{"sku":"a"}}`)
	b.submitEffect(t, toolName, `{"invoice":"inv_2","amount_cents":9900,"currency":"USD"}`) // another invoice
	br := b.browser(t)
	br.login("alice@example.com")
	if _, err := b.svc.Decide(context.Background(), approvals.Decision{RequestID: first.ID, Round: first.Round,
		PayloadHash: first.PayloadHash, Verdict: store.VerdictReject, DecidedBy: alice, Via: Via}); err != nil {
		t.Fatal(err)
	}
	b.submitEffect(t, otherTool, `{"invoice":"inv_1","amount_cents":1}`) // another tool
	second := b.submitEffect(t, toolName, `{"invoice":"inv_1","amount_cents":5200,"currency":"USD","lines":{"sku":"b"},"memo":"again"}`)

	_, page := br.get(Prefix + "/requests/" + second.ID)
	for _, want := range []string{
		`Compared with the latest earlier request for invoice <code>inv_1</code>`,
		`<code class="short-key" title="` + first.Key + `">` + approvals.ShortKey(first.Key) + `</code>`,
		`<span class="state" id="previous-state">rejected</span>`,
		`<tr><td><code>amount_cents</code></td><td class="before">4200</td><td class="after">5200</td></tr>`,
		`<tr><td><code>lines.sku</code></td><td class="before">a</td><td class="after">b</td></tr>`,
		`<tr><td><code>memo</code></td><td class="before">(none)</td><td class="after">again</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the request page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<code>currency</code>") || strings.Contains(page, "<code>invoice</code>") {
		t.Error("the difference lists fields that did not change")
	}
	if _, page := br.get(Prefix + "/requests/" + first.ID); !strings.Contains(page, `id="previous-none">No earlier request for invoice <code>inv_1</code>`) {
		t.Errorf("the first request's page does not say it has no earlier one:\n%s", page)
	}
}

// A tool reviewed in the console alone has no card to ask its preview:
// the request's page asks it (signed, once), within the timeout, and shows
// it.
func TestRequestPageAsksThePreviewNoCardAsked(t *testing.T) {
	b := setup(t, func(b *bundle, o *Options) {
		o.Previews = surface.NewPreviewer(b.store, b.svc, previewhttp.New(), nil)
	})
	secret := []byte("dispatch-secret")
	var calls, unsigned atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := client.VerifyRequest(secret, r, body, time.Minute); err != nil {
			unsigned.Add(1)
			http.Error(w, "unsigned", http.StatusUnauthorized)
			return
		}
		calls.Add(1)
		fmt.Fprint(w, `{"changes": [{"field": "balance_cents", "before": 1000, "after": 5200}]}`)
	}))
	t.Cleanup(provider.Close)
	b.withTool(func(tool *approvals.Tool) {
		tool.Preview = &approvals.PreviewEndpoint{URL: provider.URL + "/preview", Timeout: time.Second, Secrets: [][]byte{secret}}
	})

	req := b.submit(t, toolName, "credit")
	br := b.browser(t)
	br.login("alice@example.com")
	for range 2 {
		start := time.Now()
		_, page := br.get(Prefix + "/requests/" + req.ID)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("the page took %s", took)
		}
		if !strings.Contains(page, `<tr><td><code>balance_cents</code></td><td class="before">1000</td><td class="after">5200</td></tr>`) {
			t.Errorf("the page does not show the preview it asked:\n%s", page)
		}
	}
	if n, bad := calls.Load(), unsigned.Load(); n != 1 || bad != 0 {
		t.Errorf("the preview was asked %d times (%d unsigned); want once, signed", n, bad)
	}
}

package inbox

import (
	"encoding/json"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// A request's page shows what its write changes, as its tool's preview
// said, escaped and with its misleading text flagged; a failed preview says
// it is unavailable; a tool without a preview shows none.
func TestRequestPageShowsWhatChanges(t *testing.T) {
	t.Parallel()
	b := setupWith(t, &drivertest.SQLite)
	plain := b.submit(t, nil)
	tools := maps.Clone(b.svc.CurrentTools())
	tool := tools[toolName]
	tool.Preview = &approvals.PreviewEndpoint{URL: "https://previews.example.com", Timeout: time.Second}
	tools[toolName] = tool
	b.svc.Reconfigure(tools, nil)

	if _, page := get(t, b.server, DefaultPrefix+"/requests/"+plain.ID); !strings.Contains(page, `id="preview-unavailable">Preview unavailable.`) {
		t.Errorf("a request without its preview does not say it is unavailable:\n%s", page)
	}
	record := func(p store.Preview) {
		t.Helper()
		if ok, err := b.store.ClaimPreview(b.ctx, store.ClaimPreviewParams{RequestID: p.RequestID, StaleBefore: time.Now().Add(-time.Hour)}); err != nil || !ok {
			t.Fatalf("ClaimPreview = %v, %v", ok, err)
		}
		if ok, err := b.store.RecordPreview(b.ctx, p); err != nil || !ok {
			t.Fatalf("RecordPreview = %v, %v", ok, err)
		}
	}
	record(store.Preview{RequestID: plain.ID, State: store.PreviewReady, Changes: []store.PreviewChange{
		{Field: "balance_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "note", Before: json.RawMessage(`null`), After: json.RawMessage(`"<b>x</b> \u202e"`)},
	}})
	status, page := get(t, b.server, DefaultPrefix+"/requests/"+plain.ID)
	if status != http.StatusOK {
		t.Fatalf("the request page answered %d", status)
	}
	for _, want := range []string{
		`<tr><td><code>balance_cents</code></td><td class="before">1000</td><td class="after">5200</td></tr>`,
		`<td class="before">(none)</td><td class="after">&lt;b&gt;x&lt;/b&gt; ` + "\u202e" + `</td>`,
		`preview/changes/1/after holds bidirectional controls`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the request page lacks %q:\n%s", want, page)
		}
	}
}

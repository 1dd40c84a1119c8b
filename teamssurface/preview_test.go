package teamssurface

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// The Teams card shows what the write changes, each field before → after
// with its Markdown escaped and misleading text flagged, or that the
// preview is unavailable.
func TestCardShowsWhatChanges(t *testing.T) {
	t.Parallel()
	tool := approvals.Tool{Name: "billing.credit", Preview: &approvals.PreviewEndpoint{URL: "https://p.example.com"}}
	render := func(p *store.Preview) string {
		v := surface.View{Request: store.Request{Key: "wa_0123456789abcdef", Tool: "billing.credit", Snapshot: []byte(`{"a":1}`)},
			Round: 1, State: "pending", Tool: tool, Preview: p}
		b, err := json.Marshal(card(v, ""))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	got := render(&store.Preview{State: store.PreviewReady, Changes: []store.PreviewChange{
		{Field: "balance_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "note", Before: json.RawMessage(`null`), After: json.RawMessage(`"*bold* a\u202eb"`)},
	}})
	for _, want := range []string{`"What changes"`, `{"title":"balance\\_cents","value":"\\1000 → \\5200"}`,
		`"value":"(none) → \\*bold\\* a` + "\u202e" + `b"`, `preview/changes/1/after holds bidirectional controls`} {
		if !strings.Contains(got, want) {
			t.Errorf("the card lacks %s:\n%s", want, got)
		}
	}
	if got := render(&store.Preview{State: store.PreviewFailed, Reason: "x"}); !strings.Contains(got, "What changes: preview unavailable") {
		t.Errorf("a failed preview shows as:\n%s", got)
	}
}

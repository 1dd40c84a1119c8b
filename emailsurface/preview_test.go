package emailsurface

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// The message says what the write changes, each field before -> after on
// one line, misleading text flagged, or that the preview is unavailable.
func TestMessageSaysWhatChanges(t *testing.T) {
	t.Parallel()
	tool := approvals.Tool{Name: "billing.credit", Preview: &approvals.PreviewEndpoint{URL: "https://p.example.com"}}
	write := func(p *store.Preview, tool approvals.Tool) string {
		var b strings.Builder
		writeChange(&b, surface.View{Tool: tool, Preview: p})
		return b.String()
	}
	got := write(&store.Preview{State: store.PreviewReady, Changes: []store.PreviewChange{
		{Field: "balance_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "note", Before: json.RawMessage(`"a"`), After: json.RawMessage(`"line\nbreak a\u200bb"`)},
	}}, tool)
	for _, want := range []string{"What changes:\n", "  balance_cents: 1000 -> 5200\n", "  note: a -> line break a\u200bb\n",
		"Check the preview's text:\n  - preview/changes/1/after holds invisible characters"} {
		if !strings.Contains(got, want) {
			t.Errorf("the message lacks %q:\n%s", want, got)
		}
	}
	if got := write(nil, tool); got != "What changes: preview unavailable.\n\n" {
		t.Errorf("no preview yet: %q", got)
	}
	if got := write(nil, approvals.Tool{Name: "plain"}); got != "" {
		t.Errorf("a tool without a preview: %q", got)
	}
}

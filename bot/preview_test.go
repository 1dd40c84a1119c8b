package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// The card shows what the write changes, field by field before → after, or
// the provider's summary, after the effect; its text is escaped and
// flagged as an effect's is; a failed or missing preview says so; a tool
// without a preview shows nothing of one.
func TestCardShowsWhatChanges(t *testing.T) {
	t.Parallel()
	ep := &approvals.PreviewEndpoint{URL: "https://previews.example.com"}
	render := func(tool approvals.Tool, p *store.Preview) string {
		req := store.Request{Key: "wa_0123456789abcdef", Tool: "billing.credit", RunID: "r", Step: json.RawMessage(`1`),
			Snapshot: json.RawMessage(`{"invoice":"inv_1"}`), RequestedBy: "billing-agent"}
		_, blocks := renderCard(cardView{Request: req, Round: 1, State: "pending", Tool: tool, Preview: p})
		b, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	changes := &store.Preview{State: store.PreviewReady, Changes: []store.PreviewChange{
		{Field: "balance_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "owner", Before: json.RawMessage(`"<!channel> ana"`), After: json.RawMessage(`"p\u0430ypal"`)},
	}}
	card := render(approvals.Tool{Name: "billing.credit", Preview: ep}, changes)
	for _, want := range []string{"*What changes*", "• `balance_cents`: 1000 → *5200*",
		`• ` + "`owner`" + `: \u0026lt;!channel\u0026gt; ana → *pаypal*`, ":warning: *Check the preview's text*",
		`preview/changes/1/after mixes scripts`} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	if strings.Index(card, "What changes") < strings.Index(card, "Effect") {
		t.Error("the change comes before the effect")
	}
	summary := render(approvals.Tool{Name: "billing.credit", Preview: ep}, &store.Preview{State: store.PreviewReady, Summary: "Closes T-1"})
	if !strings.Contains(summary, `*What changes*\nCloses T-1`) {
		t.Errorf("the summary is not shown:\n%s", summary)
	}
	for _, p := range []*store.Preview{nil, {State: store.PreviewFailed, Reason: "the preview endpoint answered 500"}, {State: store.PreviewFetching}} {
		if got := render(approvals.Tool{Name: "billing.credit", Preview: ep}, p); !strings.Contains(got, "preview unavailable") || strings.Contains(got, "answered 500") {
			t.Errorf("preview %+v shown as:\n%s", p, got)
		}
	}
	if plain := render(approvals.Tool{Name: "billing.credit"}, nil); strings.Contains(plain, "What changes") || strings.Contains(plain, "preview") {
		t.Errorf("a tool without a preview shows one:\n%s", plain)
	}
}

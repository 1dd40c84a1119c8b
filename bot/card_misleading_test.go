package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// A card flags text in the effect that can show the reviewer something
// other than what is written, after the effect; a plain effect has no flag.
func TestCardFlagsMisleadingText(t *testing.T) {
	t.Parallel()
	render := func(snapshot string) string {
		req := store.Request{Key: "wa_0123456789abcdef", Tool: "billing.credit", RunID: "r", Step: json.RawMessage(`1`),
			Snapshot: json.RawMessage(snapshot), RequestedBy: "billing-agent"}
		_, blocks := renderCard(cardView{Request: req, Round: 1, State: "pending", Tool: approvals.Tool{Name: "billing.credit"}})
		b, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	card := render(`{"payee":"p\u0430ypal","note":"a\u202Eb"}`)
	for _, want := range []string{":warning: *Check the text*", `/note holds bidirectional controls (U+202E)`, `/payee mixes scripts in \"pаypal\" (Latin and Cyrillic)`} {
		if !strings.Contains(card, want) {
			t.Errorf("the card lacks %q:\n%s", want, card)
		}
	}
	if strings.Index(card, "Check the text") < strings.Index(card, "payee") {
		t.Error("the flag comes before the effect")
	}
	if plain := render(`{"payee":"paypal"}`); strings.Contains(plain, "Check the text") {
		t.Errorf("a plain effect is flagged:\n%s", plain)
	}
}

package emailsurface_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals/approvalstest"
)

// A message is multipart/alternative: its plain text as before, and the
// same as HTML in which the agent's text stays text (escaped) and only the
// approve and reject links are anchors.
func TestMessagesCarryPlainTextAndEscapedHTML(t *testing.T) {
	b := setup(t)
	tool, effect := "billing.credit", `{"invoice":"<a href=\"https://evil.example\">inv</a>","amount_cents":4200,"currency":"USD"}`
	approvalstest.Submit(t, b.review, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
		Tool: &tool, Effect: &effect, Summary: new(`<script>alert(1)</script> & credit`),
	}))
	b.drain()
	m := b.cardFor(ana)
	approve, reject := links(t, m) // the plain text still carries both links
	var full struct{ Text, HTML string }
	getJSON(t, b.mail.API+"/api/v1/message/"+m.ID, &full)
	if full.Text != m.Text || !strings.Contains(full.Text, "<script>alert(1)</script>") {
		t.Fatalf("the plain text part changed:\n%s", full.Text)
	}
	for _, want := range []string{`<a href="` + approve + `">`, `<a href="` + reject + `">`, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; credit"} {
		if !strings.Contains(full.HTML, want) {
			t.Errorf("the HTML part lacks %q:\n%s", want, full.HTML)
		}
	}
	if strings.Contains(full.HTML, "<script") || strings.Contains(full.HTML, `href="https://evil.example`) || strings.Count(full.HTML, "<a ") != 2 {
		t.Errorf("the HTML part lets the agent's text become markup:\n%s", full.HTML)
	}
}

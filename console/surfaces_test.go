package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
)

// slackOnly is a tool alice approves whose surfaces leave the console out.
const slackOnly = "ops.restart"

// A tool whose surfaces leave the console out is not reviewed here: its
// request is neither in the queue nor on a page, and a decision or a batch
// approval of it is refused as not found, while the same reviewer still
// decides the tools without a list (the console shows them all).
func TestToolWithoutTheConsoleIsNotDecidedHere(t *testing.T) {
	b := setup(t)
	elsewhere := b.submit(t, slackOnly, "Restart ops_7")
	here := b.submit(t, toolName, "Credit to inv_here")
	br := b.browser(t)
	br.login("alice@example.com")

	_, queue := br.get(Prefix + "/")
	if strings.Contains(queue, elsewhere.ID) || !strings.Contains(queue, here.ID) {
		t.Fatalf("the queue should list billing's request and not the Slack-only one:\n%s", queue)
	}
	if resp, page := br.get(Prefix + "/requests/" + elsewhere.ID); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "ops_7") {
		t.Fatalf("the Slack-only request's page answered %d:\n%s", resp.StatusCode, page)
	}
	resp, page := br.post(Prefix+"/decide", decisionForm(elsewhere, "approve", csrf(t, queue)), nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("deciding the Slack-only request answered %d:\n%s", resp.StatusCode, page)
	}
	_, confirm := br.get(Prefix + "/batch?id=" + elsewhere.ID + "&id=" + here.ID)
	if !strings.Contains(confirm, `id="skipped"`) {
		t.Fatalf("the batch confirmation does not skip the Slack-only request:\n%s", confirm)
	}
	item := strings.Join([]string{elsewhere.ID, "1", elsewhere.PayloadHash}, " ")
	form := decisionForm(here, "approve", csrf(t, queue))
	form.Set("item", item)
	if _, done := br.post(Prefix+"/batch", form, nil); !strings.Contains(done, `data-code="not_found"`) {
		t.Fatalf("a batch naming the Slack-only request did not refuse it as not found:\n%s", done)
	}
	if s := b.status(t, elsewhere.ID); s != store.RequestPending {
		t.Fatalf("the Slack-only request is %s after the console's attempts, want pending", s)
	}

	resp, page = br.post(Prefix+"/decide", decisionForm(here, "approve", csrf(t, queue)), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-code="decided"`) {
		t.Fatalf("approving billing's request answered %d:\n%s", resp.StatusCode, page)
	}
}

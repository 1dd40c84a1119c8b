package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// editForm is the edit form of req with values for its fields.
func editForm(req store.Request, token string, values map[string]string) url.Values {
	f := url.Values{"round": {fmt.Sprint(req.Round)}, "payload_hash": {req.PayloadHash}}
	if token != "" {
		f.Set("csrf", token)
	}
	for k, v := range values {
		f.Set(fieldValuePrefix+k, v)
	}
	return f
}

var creditValues = map[string]string{"invoice": "inv_8841", "amount_cents": "4300", "currency": "USD"}

// An approver edits a request from its page: the form shows the effect's
// fields, the edit is a new request approved by them, and the original
// shows that it was replaced.
func TestEditAndApprove(t *testing.T) {
	b := setup(t)
	req := b.submit(t, toolName, "Credit to inv_edit")
	br := b.browser(t)
	br.login("alice@example.com")
	_, page := br.get(Prefix + "/requests/" + req.ID)
	if !strings.Contains(page, `id="edit"`) {
		t.Fatalf("the request page has no edit link:\n%s", page)
	}
	resp, form := br.get(Prefix + "/requests/" + req.ID + "/edit")
	if resp.StatusCode != http.StatusOK || !strings.Contains(form, `name="field.amount_cents" value="4200"`) ||
		!strings.Contains(form, `name="field.invoice" value="inv_8841"`) {
		t.Fatalf("the edit form answered %d:\n%s", resp.StatusCode, form)
	}
	token := csrf(t, form)

	// Without the session's token, or with a value of the wrong kind,
	// nothing is stored.
	if resp, _ := br.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, "", creditValues), nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an edit without the CSRF token answered %d", resp.StatusCode)
	}
	bad := map[string]string{"invoice": "inv_8841", "amount_cents": `"4300"`, "currency": "USD"}
	resp, page = br.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, token, bad), nil)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, `data-code="invalid_request"`) || !strings.Contains(page, "amount_cents") {
		t.Errorf("a number field holding a string answered %d:\n%s", resp.StatusCode, page)
	}
	if s := b.status(t, req.ID); s != store.RequestPending {
		t.Fatalf("after refused edits the request is %s", s)
	}

	resp, page = br.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, token, creditValues), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-code="edited_approved"`) || !strings.Contains(page, "<code>amount_cents</code>") {
		t.Fatalf("the edit answered %d:\n%s", resp.StatusCode, page)
	}
	orig, err := b.store.RequestByID(t.Context(), req.ID)
	if err != nil || orig.Status != store.RequestEdited || orig.SupersededBy == "" {
		t.Fatalf("the original = %s superseded by %q, %v", orig.Status, orig.SupersededBy, err)
	}
	edit, err := b.store.RequestByKey(t.Context(), orig.SupersededBy)
	if err != nil || edit.Status != store.RequestApproved || string(edit.Snapshot) != `{"amount_cents":4300,"currency":"USD","invoice":"inv_8841"}` {
		t.Fatalf("the edit = %+v, %v", edit, err)
	}
	if !strings.Contains(page, approvals.ShortKey(edit.Key)) {
		t.Errorf("the result does not show the new request's short key:\n%s", page)
	}
	if d, err := b.store.LatestDecision(t.Context(), edit.ID); err != nil || d.DecidedBy != alice || d.Via != Via {
		t.Errorf("the edit's decision = %+v, %v", d, err)
	}
	_, page = br.get(Prefix + "/requests/" + req.ID)
	if !strings.Contains(page, `id="superseded-by"`) || strings.Contains(page, `id="edit"`) {
		t.Errorf("the original's page does not say it was replaced, or still offers an edit:\n%s", page)
	}
	// The same form again: the request is decided.
	resp, page = br.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, token, creditValues), nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, `data-code="already_decided"`) {
		t.Errorf("editing the edited request again answered %d:\n%s", resp.StatusCode, page)
	}
}

// An edit into a bigger tier waits for more approvals; a reviewer outside
// the tool's approvers can neither see the form nor edit.
func TestEditIntoABiggerTierAndOutsiders(t *testing.T) {
	b := setup(t)
	tools := b.svc.CurrentTools()
	tool := tools[toolName]
	tool.Tiers = []approvals.Tier{{Name: "large", When: approvals.Condition{Field: "amount_cents", Op: approvals.OpGT, Value: json.Number("10000")}, Approvals: 2}}
	b.svc.Tools = map[string]approvals.Tool{toolName: tool, otherTool: tools[otherTool]}
	req := b.submit(t, toolName, "Credit to inv_tier")

	outsider := b.browser(t)
	outsider.login("eve@example.com")
	_, queue := outsider.get(Prefix + "/")
	if resp, page := outsider.get(Prefix + "/requests/" + req.ID + "/edit"); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "inv_8841") {
		t.Errorf("an outsider's edit form answered %d:\n%s", resp.StatusCode, page)
	}
	if resp, _ := outsider.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, csrf(t, queue), creditValues), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an outsider's edit answered %d", resp.StatusCode)
	}
	if s := b.status(t, req.ID); s != store.RequestPending {
		t.Fatalf("after an outsider's edit the request is %s", s)
	}

	br := b.browser(t)
	br.login("alice@example.com")
	_, form := br.get(Prefix + "/requests/" + req.ID + "/edit")
	values := map[string]string{"invoice": "inv_8841", "amount_cents": "50000", "currency": "USD"}
	resp, page := br.post(Prefix+"/requests/"+req.ID+"/edit", editForm(req, csrf(t, form), values), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `data-code="edited_counted"`) || !strings.Contains(page, `id="edit-progress"`) {
		t.Fatalf("an edit into the bigger tier answered %d:\n%s", resp.StatusCode, page)
	}
	orig, err := b.store.RequestByID(t.Context(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	edit, err := b.store.RequestByKey(t.Context(), orig.SupersededBy)
	if err != nil || edit.Status != store.RequestPending || edit.Policy.Needed() != 2 {
		t.Errorf("the edit = %s needing %d, %v", edit.Status, edit.Policy.Needed(), err)
	}
}

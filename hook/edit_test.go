package hook

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// The agent learns of an approver's edit from the original: GET shows it
// edited and settled, naming the edit in superseded_by (which GET shows
// with supersedes), and its callback is request.edited with that body.
func TestAnEditedRequestNamesItsEdit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupCallbacks(t, drv)
		v := b.post(t, vectorBody).view(t)
		out, err := b.svc.ApproveWithEdit(b.ctx, approvals.Edit{RequestID: v.ID, Round: v.Round, PayloadHash: v.PayloadHash,
			Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4300,"currency":"USD"}`), EditedBy: approverA, Via: "console"})
		if err != nil {
			t.Fatalf("ApproveWithEdit: %v", err)
		}
		orig := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, testToken, nil, nil).view(t)
		if orig.Status != wire.StatusEdited || !orig.Settled || orig.SupersededBy != out.Edit.Key || orig.Supersedes != "" ||
			orig.Decision != nil || orig.Execution != nil {
			t.Errorf("the original = %+v", orig)
		}
		edit := b.do(t, http.MethodGet, "/v1/requests/"+orig.SupersededBy, testToken, nil, nil).view(t)
		if edit.Supersedes != v.Key || edit.Status != wire.StatusApproved || edit.Decision == nil || edit.Decision.By != approverA ||
			string(edit.Effect) != `{"amount_cents":4300,"currency":"USD","invoice":"inv_8841"}` {
			t.Errorf("the edit = %+v", edit)
		}
		claimed, err := b.store.ClaimCallbacks(b.ctx, 10, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, c := range claimed {
			if c.RequestID != v.ID {
				continue
			}
			found = true
			if c.Event != store.CallbackEdited {
				t.Errorf("the original's callback is %s, want request.edited", c.Event)
			}
			body, err := CallbackBody(b.ctx, b.svc, c)
			if err != nil {
				t.Fatal(err)
			}
			var got wire.Request
			if err := json.Unmarshal(body, &got); err != nil || got.Status != wire.StatusEdited || got.SupersededBy != out.Edit.Key {
				t.Errorf("the callback body = %s, %v", body, err)
			}
		}
		if !found {
			t.Errorf("no callback for the original among %+v", claimed)
		}
		list := b.do(t, http.MethodGet, "/v1/requests?status=edited", testToken, nil, nil)
		if list.status != http.StatusOK {
			t.Errorf("listing edited requests = %d %s", list.status, list.body)
		}
	})
}

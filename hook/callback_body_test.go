package hook

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// The body of an attempt at delivery says the delivery is being delivered,
// on the attempt it is, while GET shows the row as stored (pending, leased
// by the attempt); once the attempt is recorded the body says what the row
// says.
func TestCallbackBodySaysDelivering(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupCallbacks(t, drv)
		v := b.post(t, vectorBody).view(t)
		if r := b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/cancel", testToken, nil, nil); r.status != 200 {
			t.Fatalf("cancel = %d %s", r.status, r.body)
		}
		claimed, err := b.store.ClaimCallbacks(b.ctx, 10, time.Hour)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
		}
		callbackOf := func(body []byte) *wire.Callback {
			t.Helper()
			var got wire.Request
			if err := json.Unmarshal(body, &got); err != nil || got.Key != v.Key || got.Status != wire.StatusCancelled {
				t.Fatalf("body %s, %v", body, err)
			}
			return got.Callback
		}

		body, err := CallbackBody(b.ctx, b.svc, claimed[0])
		if err != nil {
			t.Fatal(err)
		}
		if cb := callbackOf(body); cb == nil || cb.State != string(store.CallbackDelivering) || cb.Attempts != 1 || cb.LastStatus != nil {
			t.Errorf("the body of the first attempt shows callback %+v; want delivering, attempt 1", cb)
		}
		r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, testToken, nil, nil)
		if cb := r.view(t).Callback; cb == nil || cb.State != string(store.CallbackPending) || cb.Attempts != 1 {
			t.Errorf("GET during the attempt shows callback %+v; want pending, attempt 1", cb)
		}

		if err := b.store.MarkCallbackDelivered(b.ctx, claimed[0], 204); err != nil {
			t.Fatal(err)
		}
		body, err = CallbackBody(b.ctx, b.svc, claimed[0])
		if err != nil {
			t.Fatal(err)
		}
		if cb := callbackOf(body); cb == nil || cb.State != string(store.CallbackDelivered) || cb.LastStatus == nil || *cb.LastStatus != 204 {
			t.Errorf("after delivery the body shows callback %+v; want delivered with 204", cb)
		}
	})
}

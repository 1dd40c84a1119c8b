package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// Wait on a request an approver edited returns at once: it is settled as
// edited, and SupersededBy names the request whose outcome to wait for.
func TestWaitOnAnEditedRequestNamesTheEdit(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/requests/wa_orig" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": "0b6c1c39-8f46-4c43-9d7e-0d3b4cb1c0a1", "key": "wa_orig", "status": "edited", "round": 1,
			"settled": true, "version": 2, "superseded_by": "wa_edit"}`)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := client.New(srv.URL, "token").Wait(ctx, "wa_orig")
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != client.StatusEdited || req.SupersededBy != "wa_edit" || !req.Settled {
		t.Errorf("Wait = %+v", req)
	}
}

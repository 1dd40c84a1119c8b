package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// delivery is one callback the agent's endpoint received.
type delivery struct {
	event, id string
	verified  error
	request   client.Request
}

// An agent verifies countersign's callbacks with client.VerifyRequest, and
// Redrive sends the newest one again under the same delivery id.
func TestCallbacksVerifyAndRedrive(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []delivery
	arrived := make(chan struct{}, 10)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{event: r.Header.Get(client.EventHeader), id: r.Header.Get(client.DeliveryHeader),
			verified: client.VerifyRequest([]byte(callbackSecret), r, body, 0)}
		_ = json.Unmarshal(body, &d.request)
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		arrived <- struct{}{}
	}))
	defer endpoint.Close()
	g := startGateWith(t, endpoint.URL)
	c := client.New(g.URL, agentToken)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	req, err := c.Request(ctx, credit(700))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Redrive(ctx, req.Key); !errors.Is(err, client.ErrNothingToRedrive) {
		t.Errorf("Redrive before any callback: %v", err)
	}
	if _, err := c.Cancel(ctx, req.Key); err != nil {
		t.Fatal(err)
	}
	await(t, g, arrived)
	// Redrive once the first delivery is recorded: a redrive while the first
	// attempt is still in flight is not what this test is about.
	for deadline := time.Now().Add(20 * time.Second); ; {
		got, err := c.Get(ctx, req.Key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Callback != nil && got.Callback.State == "delivered" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first delivery was never recorded: %+v", got.Callback)
		}
		time.Sleep(20 * time.Millisecond) // polling the recorded state
	}
	again, err := c.Redrive(ctx, req.Key)
	if err != nil || again.Callback == nil {
		t.Fatalf("Redrive: %+v, %v", again, err)
	}
	await(t, g, arrived)

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].id == "" || got[1].id != got[0].id {
		t.Fatalf("deliveries = %+v, want the same one twice", got)
	}
	for _, d := range got {
		if d.verified != nil || d.event != "request.settled" || d.request.Key != req.Key || d.request.Status != client.StatusCancelled {
			t.Errorf("delivery %+v", d)
		}
		// The body says the delivery it arrives in is being delivered.
		// The redrive started its attempts again: each is attempt 1.
		if cb := d.request.Callback; cb == nil || cb.State != "delivering" || cb.Attempts != 1 {
			t.Errorf("delivery %s carries callback %+v, want delivering on attempt 1", d.id, cb)
		}
	}
	forged := client.VerifySignature([]byte("not-the-secret"), "t=1,v1=00,v2=00", []byte("{}"), 0)
	if !errors.Is(forged, client.ErrBadSignature) {
		t.Errorf("a forged callback verified: %v", forged)
	}
}

func await(t *testing.T, g *gate, arrived <-chan struct{}) {
	t.Helper()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		t.Fatalf("no callback arrived; serve logged:\n%s", g.logText())
	}
}

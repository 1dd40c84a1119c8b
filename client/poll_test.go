package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// Poll answers at once for a version the caller has not seen, holds until
// the wait ends when nothing changes, and answers with the change as soon
// as there is one.
func TestPollLongPollsOnceFromAVersion(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := client.New(g.URL, agentToken)
	req, err := c.Request(ctx, credit(700))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if got, err := c.Poll(ctx, req.Key, 0, 10*time.Second); err != nil || got.Version != req.Version || time.Since(start) > 5*time.Second {
		t.Fatalf("Poll from version 0: %+v, %v after %v", got, err, time.Since(start))
	}
	start = time.Now()
	got, err := c.Poll(ctx, req.Key, req.Version, 700*time.Millisecond)
	if err != nil || got.Version != req.Version || got.Status != client.StatusPending || time.Since(start) < 600*time.Millisecond {
		t.Fatalf("Poll with nothing new: %+v, %v after %v", got, err, time.Since(start))
	}
	changed := make(chan *client.Request, 1)
	go func() {
		got, err := c.Poll(ctx, req.ID, req.Version, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		changed <- got
	}()
	if _, err := c.Cancel(ctx, req.Key); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-changed:
		if got == nil || got.Status != client.StatusCancelled || got.Version <= req.Version {
			t.Errorf("Poll across a cancel: %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Poll did not answer the change")
	}
}

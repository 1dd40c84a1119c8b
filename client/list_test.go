package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/countersign/countersign/client"
)

// List pages through the agent's requests newest first, with each filter;
// ListAll walks every page; a value the server refuses is an *APIError
// naming the parameter.
func TestListPagesThroughTheAgentsRequests(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	c := client.New(g.URL, agentToken)
	ctx := context.Background()
	var keys []string // newest first
	intents := []client.Intent{credit(100), credit(200), credit(300)}
	intents[1].RunID = intents[0].RunID
	intents[1].Step = 7
	for _, in := range intents {
		req, err := c.Request(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		keys = append([]string{req.Key}, keys...)
	}
	if _, err := c.Cancel(ctx, keys[0]); err != nil {
		t.Fatal(err)
	}
	keysOf := func(reqs []client.Request) []string {
		out := make([]string, len(reqs))
		for i, r := range reqs {
			out[i] = r.Key
		}
		return out
	}

	first, err := c.List(ctx, client.ListParams{Limit: 2})
	if err != nil || !slices.Equal(keysOf(first.Requests), keys[:2]) || first.NextCursor == "" {
		t.Fatalf("first page = %+v, %v; want %v and a cursor", first, err, keys[:2])
	}
	if first.Requests[0].Status != client.StatusCancelled || !first.Requests[0].Settled || first.Requests[1].Status != client.StatusPending {
		t.Errorf("first page's requests = %+v", first.Requests)
	}
	second, err := c.List(ctx, client.ListParams{Limit: 2, Cursor: first.NextCursor})
	if err != nil || !slices.Equal(keysOf(second.Requests), keys[2:]) || second.NextCursor != "" {
		t.Fatalf("second page = %+v, %v; want %v and no cursor", second, err, keys[2:])
	}

	no := false
	for name, c2 := range map[string]struct {
		p    client.ListParams
		want []string
	}{
		"everything":    {client.ListParams{}, keys},
		"a run":         {client.ListParams{RunID: intents[0].RunID}, keys[1:]},
		"cancelled":     {client.ListParams{Status: client.StatusCancelled}, keys[:1]},
		"not settled":   {client.ListParams{Settled: &no}, keys[1:]},
		"a tool":        {client.ListParams{Tool: "crm.note"}, []string{}},
		"one at a time": {client.ListParams{Limit: 1}, keys},
	} {
		var got []string
		for req, err := range c.ListAll(ctx, c2.p) {
			if err != nil {
				t.Fatalf("%s: ListAll: %v", name, err)
			}
			got = append(got, req.Key)
		}
		if !slices.Equal(got, c2.want) {
			t.Errorf("%s: ListAll = %v, want %v", name, got, c2.want)
		}
	}
	// Breaking out of the loop ends it (a page read after would panic).
	for req := range c.ListAll(ctx, client.ListParams{Limit: 1}) {
		if req.Key != keys[0] {
			t.Errorf("the first request listed is %s, want %s", req.Key, keys[0])
		}
		break
	}

	var apiErr *client.APIError
	if _, err := c.List(ctx, client.ListParams{Limit: 101}); !errors.Is(err, client.ErrInvalidRequest) ||
		!errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Field != "limit" {
		t.Errorf("a limit of 101: %v", err)
	}
	if _, err := c.List(ctx, client.ListParams{Cursor: first.NextCursor + "x"}); !errors.As(err, &apiErr) || apiErr.Field != "cursor" {
		t.Errorf("an edited cursor: %v", err)
	}
	yielded := 0
	for _, err := range c.ListAll(ctx, client.ListParams{Tool: "db.drop"}) {
		yielded++
		if !errors.As(err, &apiErr) || apiErr.Field != "tool" {
			t.Errorf("ListAll of a tool not configured: %v", err)
		}
	}
	if yielded != 1 {
		t.Errorf("ListAll of a tool not configured yielded %d times, want its error once", yielded)
	}
}

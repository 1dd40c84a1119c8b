package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// The client's types hold every field the server sends: the answers of a
// real serve, and the callbacks it posts, decode into them with unknown
// fields refused, so a field the server adds fails here until the client
// has it.
func TestRepresentationsCarryEveryFieldTheServerSends(t *testing.T) {
	t.Parallel()
	callbacks := make(chan []byte, 10)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		callbacks <- body
		w.WriteHeader(http.StatusNoContent)
	}))
	defer endpoint.Close()
	g := startGateWith(t, endpoint.URL)
	c := client.New(g.URL, agentToken)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	intent, err := json.Marshal(credit(4200))
	if err != nil {
		t.Fatal(err)
	}
	var created client.Request
	strictly(t, "the created request", answerOf(t, g, http.MethodPost, "/v1/requests", intent, http.StatusCreated), &created)
	var read client.Request
	strictly(t, "the request read", answerOf(t, g, http.MethodGet, "/v1/requests/"+created.ID, nil, http.StatusOK), &read)
	if read.ID != created.ID || read.Policy.Approvals != 1 || !slices.Equal(read.Policy.Approvers, []string{"local:reviewer"}) ||
		read.Policy.Tier != nil || read.Votes == nil || len(read.Votes) != 0 {
		t.Errorf("the request read = %+v", read)
	}

	// An amount over the tier's threshold needs two approvals: one vote
	// leaves it pending, with the vote shown.
	big, err := c.Request(ctx, credit(2_000_000))
	if err != nil {
		t.Fatal(err)
	}
	g.approve(big.ID, big.PayloadHash)
	var counted client.Request
	strictly(t, "a request with a vote", answerOf(t, g, http.MethodGet, "/v1/requests/"+big.ID, nil, http.StatusOK), &counted)
	if counted.Status != client.StatusPending || counted.Policy.Tier == nil || *counted.Policy.Tier != 0 || counted.Policy.Approvals != 2 ||
		!slices.Equal(counted.Policy.Approvers, []string{"local:reviewer", "local:second"}) ||
		len(counted.Votes) != 1 || counted.Votes[0].By != "local:reviewer" || counted.Votes[0].Verdict != "approve" || counted.Votes[0].At.IsZero() {
		t.Errorf("a request with one vote of two = %+v", counted)
	}

	// A reject with the reviewer's reason.
	const why = "the invoice was credited last week"
	refused, err := c.Request(ctx, credit(900))
	if err != nil {
		t.Fatal(err)
	}
	g.vote(refused.ID, refused.PayloadHash, "reject", why)
	var rejected client.Request
	strictly(t, "a rejected request", answerOf(t, g, http.MethodGet, "/v1/requests/"+refused.ID, nil, http.StatusOK), &rejected)
	if rejected.Status != client.StatusRejected || rejected.Decision == nil || rejected.Decision.Reason != why ||
		len(rejected.Votes) != 1 || rejected.Votes[0].Reason != why || rejected.Votes[0].Verdict != "reject" {
		t.Errorf("a rejected request = %+v (decision %+v)", rejected, rejected.Decision)
	}

	// An approved one, executed, with the provider's answer and its callback.
	g.approve(created.ID, created.PayloadHash)
	if _, err := c.Wait(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	var executed client.Request
	strictly(t, "an executed request", answerOf(t, g, http.MethodGet, "/v1/requests/"+created.ID, nil, http.StatusOK), &executed)
	if !executed.Succeeded() || executed.Execution.Response == nil || executed.Decision == nil || executed.Decision.Reason != "" ||
		len(executed.Votes) != 1 || executed.Callback == nil {
		t.Errorf("an executed request = %+v (execution %+v)", executed, executed.Execution)
	}
	// Both settled requests called the agent back with their representation.
	for range 2 {
		select {
		case body := <-callbacks:
			var posted client.Request
			strictly(t, "a callback", body, &posted)
			if !posted.Settled || (posted.ID != created.ID && posted.ID != refused.ID) {
				t.Errorf("a callback carried %+v", posted)
			}
		case <-ctx.Done():
			t.Fatal("the settled requests were not called back")
		}
	}

	var list struct {
		Tools []client.Tool `json:"tools"`
	}
	strictly(t, "the tools", answerOf(t, g, http.MethodGet, "/v1/tools", nil, http.StatusOK), &list)
	if len(list.Tools) != 2 {
		t.Errorf("tools = %+v", list.Tools)
	}
}

// answerOf sends one call to the gate as the agent, as the client would,
// and returns the body of the answer, which must have the status want.
func answerOf(t *testing.T, g *gate, method, path string, body []byte, want int) []byte {
	t.Helper()
	r, err := http.NewRequest(method, g.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+agentToken)
	r.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s answered %d, want %d: %s", method, path, resp.StatusCode, want, raw)
	}
	return raw
}

// strictly decodes raw into v, failing the test on a field v has no place
// for.
func strictly(t *testing.T, what string, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s does not fit %T: %v\n%s", what, v, err, raw)
	}
	if dec.More() {
		t.Fatalf("%s has more than one value: %s", what, raw)
	}
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/countersign/countersign/client"
)

// An agent asks for a write and waits for the decision (a person's, or the
// tool's policy's) and the outcome; a retry after a crash is the same call with the same intent.
func ExampleClient_Do() {
	c := client.New("http://127.0.0.1:8080", "agent-token")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	req, err := c.Do(ctx, client.Intent{
		RunID: "r-7f3a", Step: 6, Tool: "billing.credit",
		Effect:  map[string]any{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"},
		Summary: "Credit 42.00 USD to inv_8841",
		Reason:  "customer reported duplicate charge per ticket 5512",
	})
	switch {
	case errors.Is(err, client.ErrInvalidEffect):
		log.Print("the effect does not fit the tool's schema: ", err)
	case errors.Is(err, client.ErrDeniedByPolicy):
		// The same intent always gets this answer: change the write, or
		// ask a person to change the policy.
		var refusal *client.APIError
		errors.As(err, &refusal)
		log.Printf("refused by policy rule %s: %s", refusal.Tier, refusal.Message)
	case err != nil:
		log.Print("no outcome: ", err)
	case req.Succeeded():
		log.Print("written once under ", req.Key)
	default:
		log.Printf("not written: %s", req.Status)
	}
}

// The key is known before anything is sent, so an agent can record it with
// its own state and find the request again after a restart.
func ExampleKey() {
	key, err := client.Key(client.Intent{
		RunID: "r-7f3a", Step: 6, Tool: "billing.credit",
		Effect: map[string]any{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"},
	})
	fmt.Println(key, err)
	// Output: wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c <nil>
}

// A provider checks that a dispatch came through the gate, to this path
// with this method and under this Idempotency-Key, before it writes.
func ExampleVerifyRequest() {
	secret := []byte("the tool's dispatch secret")
	http.HandleFunc("POST /credits", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			return
		}
		if client.VerifyRequest(secret, r, body, 0) != nil {
			http.Error(w, "not signed by countersign", http.StatusUnauthorized)
			return
		}
		// … perform the write once per r.Header.Get("Idempotency-Key").
	})
}

package approvalstest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// The published test vector's intent (docs/ARCHITECTURE.md, "The key"):
// the defaults of Intent.
const (
	VectorRunID  = "r-7f3a"
	VectorStep   = `6`
	VectorTool   = "billing.credit"
	VectorEffect = `{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`
)

// IntentOpts overrides parts of Intent's default; a nil field keeps it
// (new("r-1") makes one).
type IntentOpts struct {
	RunID *string
	// Step and Effect are JSON.
	Step, Effect                  *string
	Tool                          *string
	Summary, Reason, RequestedFor *string
	IdempotencyKey                *string
}

// Intent returns the published test vector's intent, a credit of 4200
// cents to inv_8841 with its summary and reason, unless opts override
// parts of it (nil: none).
func Intent(opts *IntentOpts) approvals.Intent {
	in := approvals.Intent{
		RunID: VectorRunID, Step: json.RawMessage(VectorStep), Tool: VectorTool, Effect: json.RawMessage(VectorEffect),
		Summary: "Credit 42.00 USD to inv_8841",
		Reason:  "customer reported duplicate charge per ticket 5512",
	}
	if opts == nil {
		return in
	}
	set := func(field *string, v *string) {
		if v != nil {
			*field = *v
		}
	}
	set(&in.RunID, opts.RunID)
	set(&in.Tool, opts.Tool)
	set(&in.Summary, opts.Summary)
	set(&in.Reason, opts.Reason)
	set(&in.RequestedFor, opts.RequestedFor)
	set(&in.IdempotencyKey, opts.IdempotencyKey)
	if opts.Step != nil {
		in.Step = json.RawMessage(*opts.Step)
	}
	if opts.Effect != nil {
		in.Effect = json.RawMessage(*opts.Effect)
	}
	return in
}

// Submit stores in as agent's request and fails the test if it is
// refused.
func Submit(t testing.TB, svc *approvals.Service, agent string, in approvals.Intent) store.Request {
	t.Helper()
	req, _, err := svc.Submit(context.Background(), agent, in)
	if err != nil {
		t.Fatalf("submitting %s step %s: %v", in.RunID, in.Step, err)
	}
	return req
}

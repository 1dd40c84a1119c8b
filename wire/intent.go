package wire

import "encoding/json"

// Intent is the body of POST /v1/requests: a write an agent asks for. Step
// and Effect are the JSON sent, kept as bytes: countersign refuses what
// its strict reading would not take (duplicate members, inexact numbers),
// which a decoded value could no longer show.
type Intent struct {
	Tool   string          `json:"tool"`
	Effect json.RawMessage `json:"effect"`
	RunID  string          `json:"run_id"`
	// Step is an integer or a string, used exactly as sent: 6 and "6" are
	// different steps.
	Step json.RawMessage `json:"step"`
	// Summary, Reason and RequestedFor are for the reviewer; they never
	// enter the key.
	Summary      string `json:"summary,omitempty"`
	Reason       string `json:"reason,omitempty"`
	RequestedFor string `json:"requested_for,omitempty"`
	// IdempotencyKey, when set, is the key instead of the derived one.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

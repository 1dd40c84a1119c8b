package client

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/countersign/countersign/internal/intentkey"
)

// Intent is a write an agent asks countersign to make.
type Intent struct {
	// RunID and Step name the point in the agent's run that decided to
	// write. Step is an integer or a string, used exactly as given: 6 and
	// "6" are different steps.
	RunID string `json:"run_id"`
	Step  any    `json:"step"`
	// Tool is a tool the configuration has (Client.Tools lists them).
	Tool string `json:"tool"`
	// Effect is the write's fields, a JSON object: a map, a struct or a
	// json.RawMessage. It is what the reviewer sees and the provider gets.
	Effect any `json:"effect"`
	// Summary, Reason and RequestedFor are for the reviewer; they never
	// enter the key, so rewording them does not make a new write.
	Summary      string `json:"summary,omitempty"`
	Reason       string `json:"reason,omitempty"`
	RequestedFor string `json:"requested_for,omitempty"`
	// IdempotencyKey, when set, is the key instead of the derived one: for
	// a write the agent already tried under its own key before it had to
	// ask. It is 8 to 255 characters, each a letter, a digit or one of
	// -_.:~/+=, and begins with wa_ (in any letter case) only when it is
	// the derived key; Key and Client.Request refuse any other with an
	// *InvalidKeyError, before sending anything.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// InvalidKeyError is an Intent's IdempotencyKey that countersign would
// refuse (422 invalid_request naming the Idempotency-Key); Reason says why.
// It matches ErrInvalidRequest, as the server's refusal would.
type InvalidKeyError struct {
	Reason string
}

func (e *InvalidKeyError) Error() string { return "client: " + e.Reason }

// Is reports whether target is ErrInvalidRequest.
func (e *InvalidKeyError) Is(target error) bool { return target == ErrInvalidRequest }

// checkKey refuses in's IdempotencyKey as countersign would. A key with the
// derived keys' prefix is compared with the derived key; when the intent
// has none (a number the server refuses), the server's refusal of the
// intent is the answer.
func (in Intent) checkKey() error {
	if in.IdempotencyKey == "" {
		return nil
	}
	if err := intentkey.CheckClientKeyForm(in.IdempotencyKey); err != nil {
		return &InvalidKeyError{Reason: err.Error()}
	}
	if !intentkey.HasPrefixFold(in.IdempotencyKey) {
		return nil
	}
	basis, err := in.basis()
	if err != nil {
		return nil
	}
	derived, err := intentkey.Key(basis)
	if err != nil {
		return nil
	}
	if err := intentkey.CheckClientKey(in.IdempotencyKey, derived); err != nil {
		return &InvalidKeyError{Reason: err.Error()}
	}
	return nil
}

// Key returns the key countersign stores for the intent, computed offline:
// its IdempotencyKey if set (and one countersign takes), else "wa_" + hex(sha256(JCS({"run", "step",
// "tool", "effect"}))), the same as the hook and `countersign key`. Like
// them it refuses a number RFC 8785 would write as another value
// (9007199254740993, 1e-400, 9007199254740993.0 as a json.Number), naming
// it by its JSON Pointer: the hook would refuse the intent.
func Key(in Intent) (string, error) {
	basis, err := in.basis()
	if err != nil {
		return "", err
	}
	if in.IdempotencyKey != "" {
		if err := in.checkKey(); err != nil {
			return "", err
		}
		return in.IdempotencyKey, nil
	}
	return intentkey.Key(basis)
}

// basis returns the fields the key is derived from, as JSON.
func (in Intent) basis() (intentkey.Basis, error) {
	step, err := json.Marshal(in.Step)
	if err != nil {
		return intentkey.Basis{}, fmt.Errorf("client: encoding step: %w", err)
	}
	if _, err := strconv.ParseInt(string(step), 10, 64); err != nil && step[0] != '"' {
		return intentkey.Basis{}, fmt.Errorf("client: Step must be an integer or a string, not %s", step)
	}
	if err := intentkey.CheckNumbers(step, "/step"); err != nil {
		return intentkey.Basis{}, fmt.Errorf("client: %w", err)
	}
	effect, err := json.Marshal(in.Effect)
	if err != nil {
		return intentkey.Basis{}, fmt.Errorf("client: encoding effect: %w", err)
	}
	if len(effect) == 0 || effect[0] != '{' {
		return intentkey.Basis{}, fmt.Errorf("client: Effect must encode as a JSON object")
	}
	if err := intentkey.CheckNumbers(effect, "/effect"); err != nil {
		return intentkey.Basis{}, fmt.Errorf("client: %w", err)
	}
	return intentkey.Basis{RunID: in.RunID, Step: step, Tool: in.Tool, Effect: effect}, nil
}

package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/internal/intentkey"
	"github.com/countersign/countersign/internal/strictjson"
)

// MaxBodyBytes caps every request body the hook reads.
const MaxBodyBytes = 1 << 20

// Intent is an agent's declared write as posted to the hook.
type Intent struct {
	RunID          string
	Step           json.RawMessage // an integer or a string, exactly as sent
	Tool           string
	Effect         json.RawMessage // a JSON object
	Snapshot       []byte          // the effect's canonical bytes; set by DecodeIntent
	Summary        string
	Reason         string
	RequestedFor   string // one person (identity.ParsePerson); Submit refuses others
	IdempotencyKey string
}

// Basis returns the fields the key is derived from.
func (in Intent) Basis() Basis {
	return Basis{RunID: in.RunID, Step: in.Step, Tool: in.Tool, Effect: in.Effect, CanonicalEffect: in.Snapshot}
}

var intentFields = []string{"run_id", "step", "tool", "effect", "summary", "reason", "requested_for", "idempotency_key"}

// DecodeIntent parses an intake body strictly: malformed JSON is
// CodeMalformedJSON; duplicate member names anywhere, unknown top-level fields,
// missing or mistyped fields, and numbers RFC 8785 would not write as the
// value sent (intentkey.CheckNumber) are CodeInvalidRequest naming the field
// (a number by its JSON Pointer), and so is U+0000 in any string: the
// ledger's text cannot hold it (DECISIONS.md). A reviewer and an executor must never
// read different values from the same bytes, so nothing ambiguous is accepted.
func DecodeIntent(body []byte) (Intent, error) {
	if err := CheckJSON(body); err != nil {
		return Intent{}, err
	}
	var fields map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(body); len(trimmed) == 0 || trimmed[0] != '{' {
		return Intent{}, invalid("", "the body must be a JSON object")
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return Intent{}, invalid("", "the body must be a JSON object")
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(intentFields, name) {
			return Intent{}, invalid(name, "unknown field %q", name)
		}
	}

	var in Intent
	var err error
	if in.RunID, err = requiredString(fields, "run_id", 256); err != nil {
		return Intent{}, err
	}
	if in.Step, err = decodeStep(fields["step"]); err != nil {
		return Intent{}, err
	}
	if in.Tool, err = requiredString(fields, "tool", 256); err != nil {
		return Intent{}, err
	}
	effect := bytes.TrimSpace(fields["effect"])
	if len(effect) == 0 || effect[0] != '{' {
		return Intent{}, invalid("effect", "effect is required and must be a JSON object")
	}
	in.Effect = effect
	if err := checkEffectNUL(effect); err != nil {
		return Intent{}, err
	}
	if in.Snapshot, err = Canonicalize(effect); err != nil {
		return Intent{}, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
	}
	for _, f := range []struct {
		name  string
		max   int
		value *string
	}{
		{"summary", 2000, &in.Summary},
		{"reason", 4000, &in.Reason},
		{"requested_for", identity.MaxLen, &in.RequestedFor},
	} {
		if *f.value, err = optionalString(fields, f.name, f.max); err != nil {
			return Intent{}, err
		}
	}
	// The client key's own rule bounds it and names any character it
	// refuses, U+0000 among them, in the words every surface uses.
	if in.IdempotencyKey, err = decodeString(fields, "idempotency_key"); err != nil {
		return Intent{}, err
	}
	if in.IdempotencyKey != "" {
		if err := CheckClientKeyForm(in.IdempotencyKey); err != nil {
			return Intent{}, invalid("idempotency_key", "%v", err)
		}
	}
	return in, nil
}

func requiredString(fields map[string]json.RawMessage, name string, max int) (string, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", invalid(name, "%s is required", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "%s must be a string", name)
	}
	if strings.TrimSpace(s) == "" {
		return "", invalid(name, "%s must not be empty", name)
	}
	return s, checkText(name, s, max)
}

func optionalString(fields map[string]json.RawMessage, name string, max int) (string, error) {
	s, err := decodeString(fields, name)
	if err != nil {
		return "", err
	}
	return s, checkText(name, s, max)
}

// decodeString returns an optional string member as sent ("" when it is
// missing or null).
func decodeString(fields map[string]json.RawMessage, name string) (string, error) {
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "%s must be a string", name)
	}
	return s, nil
}

// checkText refuses a text field longer than max bytes or holding U+0000.
func checkText(name, s string, max int) error {
	if len(s) > max {
		return invalid(name, "%s is longer than %d bytes", name, max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid(name, "%s contains U+0000 (NUL), which countersign does not accept in text", name)
	}
	return nil
}

// checkEffectNUL refuses an effect with U+0000 in a string value, naming
// the value's path, or in a member name, naming the object that holds it.
// effect is known to be well-formed.
func checkEffectNUL(effect []byte) error {
	// Well-formed JSON can only write U+0000 as this escape, so most effects
	// are cleared without decoding.
	if !bytes.Contains(effect, []byte(`\u0000`)) {
		return nil
	}
	at, name, found := strictjson.FindNUL(effect, "/effect")
	switch {
	case !found:
		return nil
	case name:
		return invalid(at, "a member name in %s contains U+0000 (NUL), which an effect may not hold", at)
	}
	return invalid(at, "%s contains U+0000 (NUL), which an effect may not hold", at)
}

// decodeStep accepts an integer or a non-empty string and keeps it as sent:
// 6 and "6" are different steps.
func decodeStep(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, invalid("step", "step is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || strings.TrimSpace(s) == "" || len(s) > 256 {
			return nil, invalid("step", "step must be an integer or a non-empty string of at most 256 bytes")
		}
		if err := checkText("step", s, 256); err != nil {
			return nil, err
		}
		// Re-encode so escapes in the input do not change the stored form.
		return json.Marshal(s)
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return nil, invalid("step", "step must be an integer or a non-empty string")
	}
	return raw, nil
}

// CheckJSON reports whether body is exactly one well-formed UTF-8 JSON value
// with no duplicate member names at any depth and no nesting deeper than 64
// (strictjson.Check), whose every number RFC 8785 writes as the value sent
// (intentkey.CheckNumbers): otherwise the reviewer, the key and the provider
// would read another amount than the agent's. Errors are *InputError.
func CheckJSON(body []byte) error {
	var e *strictjson.Error
	if errors.As(strictjson.Check(body), &e) {
		if e.Malformed {
			return &InputError{Code: CodeMalformedJSON, Message: e.Message}
		}
		return &InputError{Code: CodeInvalidRequest, Field: e.Path, Message: e.Message}
	}
	err := intentkey.CheckNumbers(body, "")
	var n *intentkey.NumberError
	switch {
	case errors.As(err, &n):
		return &InputError{Code: CodeInvalidRequest, Field: n.Pointer, Message: n.Error()}
	case err != nil: // strictjson found the body well-formed; kept for safety
		return &InputError{Code: CodeMalformedJSON, Message: "the body is not valid JSON: " + err.Error()}
	}
	return nil
}

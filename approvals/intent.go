package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBodyBytes caps every request body the hook reads.
const MaxBodyBytes = 1 << 20

// maxDepth caps nesting so a hostile body cannot exhaust the stack.
const maxDepth = 64

// maxExactInteger is the largest integer every JSON reader (and JCS's
// ES6 number formatting) holds exactly.
const maxExactInteger = 1 << 53

// Intent is an agent's declared write as posted to the hook.
type Intent struct {
	RunID          string
	Step           json.RawMessage // an integer or a string, exactly as sent
	Tool           string
	Effect         json.RawMessage // a JSON object
	Snapshot       []byte          // the effect's canonical bytes; set by DecodeIntent
	Summary        string
	Reason         string
	RequestedFor   string // a Slack user id (U…, W…) or local:name; Submit refuses others
	IdempotencyKey string
}

// Basis returns the fields the key is derived from.
func (in Intent) Basis() Basis {
	return Basis{RunID: in.RunID, Step: in.Step, Tool: in.Tool, Effect: in.Effect, CanonicalEffect: in.Snapshot}
}

var intentFields = []string{"run_id", "step", "tool", "effect", "summary", "reason", "requested_for", "idempotency_key"}

// DecodeIntent parses an intake body strictly: malformed JSON is
// CodeMalformedJSON; duplicate member names anywhere, unknown top-level fields,
// missing or mistyped fields, and integers too large to be exact are
// CodeInvalidRequest naming the field, and so is U+0000 in any string: the
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
		{"requested_for", 64, &in.RequestedFor},
		{"idempotency_key", 255, &in.IdempotencyKey},
	} {
		if *f.value, err = optionalString(fields, f.name, f.max); err != nil {
			return Intent{}, err
		}
	}
	if in.IdempotencyKey != "" && !ValidClientKey(in.IdempotencyKey) {
		return Intent{}, invalid("idempotency_key", "idempotency_key must be 8 to 255 printable ASCII characters")
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
	raw, ok := fields[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(name, "%s must be a string", name)
	}
	return s, checkText(name, s, max)
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
	at, name, found := nulIn(json.NewDecoder(bytes.NewReader(effect)), "effect")
	switch {
	case !found:
		return nil
	case name:
		return invalid(at, "a member name in %s contains U+0000 (NUL), which an effect may not hold", at)
	}
	return invalid(at, "%s contains U+0000 (NUL), which an effect may not hold", at)
}

// nulIn finds the first string value or member name holding U+0000 in the
// value dec reads next, at path.
func nulIn(dec *json.Decoder, path string) (at string, name, found bool) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, false
	}
	switch tok := tok.(type) {
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := fmt.Sprintf("%s[%d]", path, i)
			if tok == '{' {
				nameTok, err := dec.Token()
				if err != nil {
					return "", false, false
				}
				member, _ := nameTok.(string)
				if strings.IndexByte(member, 0) >= 0 {
					return path, true, true
				}
				child = joinPath(path, member)
			}
			if at, name, found := nulIn(dec, child); found {
				return at, name, found
			}
		}
		_, _ = dec.Token() // the closing delimiter
	case string:
		if strings.IndexByte(tok, 0) >= 0 {
			return path, false, true
		}
	}
	return "", false, false
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
// with no duplicate member names at any depth, no nesting deeper than 64 and no
// integer beyond ±2^53. Errors are *InputError.
func CheckJSON(body []byte) error {
	if !utf8.Valid(body) {
		return &InputError{Code: CodeMalformedJSON, Message: "the body is not valid UTF-8"}
	}
	// Most bodies are well-formed and pass: one scan without allocating a
	// token per value says so. Anything it doubts takes the token walk,
	// which names the problem.
	if json.Valid(body) && passes(body) {
		return nil
	}
	return checkJSONTokens(body)
}

// checkJSONTokens is CheckJSON by a token walk, which names the problem.
func checkJSONTokens(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := walkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &InputError{Code: CodeMalformedJSON, Message: "the body has data after its JSON value"}
	}
	return nil
}

// passes reports whether a body that json.Valid accepts has no duplicate
// member names, no nesting deeper than maxDepth and no number checkNumber
// refuses. It allocates only for escaped member names and large objects.
func passes(body []byte) bool {
	w := validWalker{b: body}
	return w.value(0)
}

// validWalker walks JSON already known to be well-formed.
type validWalker struct {
	b []byte
	i int
}

func (w *validWalker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *validWalker) value(depth int) bool {
	if depth > maxDepth {
		return false
	}
	w.space()
	switch c := w.b[w.i]; c {
	case '{':
		w.i++
		w.space()
		if w.b[w.i] == '}' {
			w.i++
			return true
		}
		var small [16]string
		names := small[:0]
		var many map[string]struct{}
		for {
			w.space()
			name, ok := w.str()
			if !ok {
				return false
			}
			if many != nil {
				if _, dup := many[name]; dup {
					return false
				}
				many[name] = struct{}{}
			} else {
				for _, n := range names {
					if n == name {
						return false
					}
				}
				if names = append(names, name); len(names) == len(small) {
					many = make(map[string]struct{}, 2*len(small))
					for _, n := range names {
						many[n] = struct{}{}
					}
				}
			}
			w.space()
			w.i++ // the colon
			if !w.value(depth + 1) {
				return false
			}
			w.space()
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			w.i++ // the closing brace
			return true
		}
	case '[':
		w.i++
		w.space()
		if w.b[w.i] == ']' {
			w.i++
			return true
		}
		for {
			if !w.value(depth + 1) {
				return false
			}
			w.space()
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			w.i++ // the closing bracket
			return true
		}
	case '"':
		_, ok := w.str()
		return ok
	case 't', 'n':
		w.i += 4
		return true
	case 'f':
		w.i += 5
		return true
	default:
		start := w.i
		for w.i < len(w.b) && strings.IndexByte("+-0123456789.eE", w.b[w.i]) >= 0 {
			w.i++
		}
		return checkNumber(json.Number(w.b[start:w.i]), "") == nil
	}
}

// str reads a string at w.i and returns its decoded value.
func (w *validWalker) str() (string, bool) {
	start, escaped := w.i, false
	for w.i++; w.b[w.i] != '"'; w.i++ {
		if w.b[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	w.i++
	raw := w.b[start:w.i]
	if !escaped {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	if depth > maxDepth {
		return invalid(path, "the JSON nests deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return malformed(err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			seen := make(map[string]struct{})
			for dec.More() {
				nameTok, err := dec.Token()
				if err != nil {
					return malformed(err)
				}
				name, ok := nameTok.(string)
				if !ok {
					return &InputError{Code: CodeMalformedJSON, Message: "an object member name is not a string"}
				}
				child := joinPath(path, name)
				if _, dup := seen[name]; dup {
					return invalid(child, "duplicate member name %q in %s", name, describePath(path))
				}
				seen[name] = struct{}{}
				if err := walkValue(dec, child, depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walkValue(dec, fmt.Sprintf("%s[%d]", path, i), depth+1); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return malformed(err)
		}
	case json.Number:
		return checkNumber(tok, path)
	}
	return nil
}

func checkNumber(n json.Number, path string) error {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil || i > maxExactInteger || i < -maxExactInteger {
			return invalid(path, "the number %s at %s is too large to be exact; send it as a string", s, describePath(path))
		}
		return nil
	}
	if f, err := strconv.ParseFloat(s, 64); err != nil || math.IsInf(f, 0) {
		return invalid(path, "the number %s at %s is out of range", s, describePath(path))
	}
	return nil
}

func malformed(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &InputError{Code: CodeMalformedJSON, Message: fmt.Sprintf("the body is not valid JSON: %s at byte %d", syntax.Error(), syntax.Offset)}
	}
	return &InputError{Code: CodeMalformedJSON, Message: "the body is not valid JSON: " + err.Error()}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func describePath(path string) string {
	if path == "" {
		return "the top-level object"
	}
	return path
}

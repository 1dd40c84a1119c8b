// Package intentkey is the intent key scheme (docs/ARCHITECTURE.md, "The
// key"): "wa_" + hex(sha256(JCS({"run", "step", "tool", "effect"}))). The hook
// and the Go client both derive keys here, so the offline key an agent
// computes is the one the gate stores. It imports the standard library and
// the RFC 8785 library's number formatting only.
package intentkey

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Prefix versions the key scheme; a new scheme gets a new prefix.
const Prefix = "wa_"

// Basis is what a derived key is computed from. Free text (summary, reason),
// timestamps and anything a model may phrase differently never enter it.
type Basis struct {
	RunID  string
	Step   json.RawMessage // an integer or a string, exactly as sent
	Tool   string
	Effect json.RawMessage // a JSON object
	// CanonicalEffect, when set, is the effect's RFC 8785 form (Canonicalize),
	// already computed at decode; it is not canonicalized a second time.
	CanonicalEffect []byte
}

// Canonical returns the RFC 8785 (JCS) bytes of
// {"run": …, "step": …, "tool": …, "effect": …}.
func (b Basis) Canonical() ([]byte, error) {
	if b.CanonicalEffect != nil {
		// JCS orders members by name, and "effect" sorts before "run", "step"
		// and "tool": the whole is {"effect":E, then the rest's members.
		rest, err := Basis{RunID: b.RunID, Step: b.Step, Tool: b.Tool}.canonicalRest()
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, len(`{"effect":,`)+len(b.CanonicalEffect)+len(rest))
		out = append(append(append(out, `{"effect":`...), b.CanonicalEffect...), ',')
		return append(out, rest[1:]...), nil
	}
	return canonicalJSON(struct {
		Run    string          `json:"run"`
		Step   json.RawMessage `json:"step"`
		Tool   string          `json:"tool"`
		Effect json.RawMessage `json:"effect"`
	}{b.RunID, b.Step, b.Tool, b.Effect})
}

// canonicalRest returns the RFC 8785 bytes of {"run": …, "step": …, "tool": …}:
// two strings, and a step that is an integer (within ±2^53, as DecodeIntent
// accepts) or a string, written as RFC 8785 writes them.
func (b Basis) canonicalRest() ([]byte, error) {
	step := bytes.TrimSpace(b.Step)
	if len(step) == 0 {
		return nil, fmt.Errorf("encoding key basis: no step")
	}
	out := make([]byte, 0, 32+len(b.RunID)+len(step)+len(b.Tool))
	out = appendJCSString(append(out, `{"run":`...), b.RunID)
	out = append(out, `,"step":`...)
	if step[0] == '"' {
		var s string
		if err := json.Unmarshal(step, &s); err != nil {
			return nil, fmt.Errorf("encoding key basis: %w", err)
		}
		out = appendJCSString(out, s)
	} else {
		n, err := strconv.ParseInt(string(step), 10, 64)
		if err != nil || n > 1<<53 || n < -(1<<53) || step[0] == '+' {
			// Anything else takes the general path.
			return Basis{RunID: b.RunID, Step: b.Step, Tool: b.Tool}.canonicalGeneral()
		}
		out = strconv.AppendInt(out, n, 10)
	}
	out = appendJCSString(append(out, `,"tool":`...), b.Tool)
	return append(out, '}'), nil
}

// canonicalGeneral canonicalizes {"run": …, "step": …, "tool": …} by the
// general path.
func (b Basis) canonicalGeneral() ([]byte, error) {
	return canonicalJSON(struct {
		Run  string          `json:"run"`
		Step json.RawMessage `json:"step"`
		Tool string          `json:"tool"`
	}{b.RunID, b.Step, b.Tool})
}

// canonicalJSON encodes a key basis and canonicalizes it: the general
// path, for what the fast paths do not write.
func canonicalJSON(basis any) ([]byte, error) {
	raw, err := json.Marshal(basis)
	if err != nil {
		return nil, fmt.Errorf("encoding key basis: %w", err)
	}
	canonical, err := Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing key basis: %w", err)
	}
	return canonical, nil
}

// appendJCSString writes s as RFC 8785 (ECMAScript JSON.stringify) writes a
// string: quote and backslash escaped, control characters as \b \t \n \f \r
// or \u00xx, everything else, non-ASCII included, as is. Invalid UTF-8 is
// written as U+FFFD, as a JSON decoder would have read it.
func appendJCSString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, r := range s {
		switch {
		case r == '"':
			out = append(out, '\\', '"')
		case r == '\\':
			out = append(out, '\\', '\\')
		case r == '\b':
			out = append(out, '\\', 'b')
		case r == '\t':
			out = append(out, '\\', 't')
		case r == '\n':
			out = append(out, '\\', 'n')
		case r == '\f':
			out = append(out, '\\', 'f')
		case r == '\r':
			out = append(out, '\\', 'r')
		case r < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xf])
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return append(out, '"')
}

// Key derives the intent key: "wa_" + hex(sha256(JCS(basis))).
func Key(b Basis) (string, error) {
	key, _, err := Derive(b)
	return key, err
}

// Derive returns the derived key and the basis hash, the fingerprint stored
// with every key (derived or sent by the client) to tell a replay from a
// reuse of the key for another write. Both come from one digest.
func Derive(b Basis) (key, basisHash string, err error) {
	canonical, err := b.Canonical()
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(canonical)
	digest := hex.EncodeToString(sum[:])
	return Prefix + digest, "sha256:" + digest, nil
}

// Short is the form shown to humans: the first 12 characters and the last 4.
func Short(key string) string {
	if len(key) <= 16 {
		return key
	}
	return key[:12] + "…" + key[len(key)-4:]
}

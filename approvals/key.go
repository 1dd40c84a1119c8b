package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gowebpki/jcs"
)

// KeyPrefix versions the key scheme; a new scheme gets a new prefix.
const KeyPrefix = "wa_"

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
	raw, err := json.Marshal(struct {
		Run    string          `json:"run"`
		Step   json.RawMessage `json:"step"`
		Tool   string          `json:"tool"`
		Effect json.RawMessage `json:"effect"`
	}{b.RunID, b.Step, b.Tool, b.Effect})
	if err != nil {
		return nil, fmt.Errorf("encoding key basis: %w", err)
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing key basis: %w", err)
	}
	return canonical, nil
}

// canonicalRest returns the RFC 8785 bytes of {"run": …, "step": …, "tool": …}.
func (b Basis) canonicalRest() ([]byte, error) {
	raw, err := json.Marshal(struct {
		Run  string          `json:"run"`
		Step json.RawMessage `json:"step"`
		Tool string          `json:"tool"`
	}{b.RunID, b.Step, b.Tool})
	if err != nil {
		return nil, fmt.Errorf("encoding key basis: %w", err)
	}
	canonical, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalizing key basis: %w", err)
	}
	return canonical, nil
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
	return KeyPrefix + digest, "sha256:" + digest, nil
}

// Canonicalize returns the RFC 8785 form of a JSON value: the snapshot bytes
// stored, shown to reviewers and sent to the provider.
func Canonicalize(raw []byte) ([]byte, error) {
	return jcs.Transform(raw)
}

// PayloadHash is the hash of a snapshot as recorded on approvals and checked
// by the executor before it sends.
func PayloadHash(snapshot []byte) string { return hashOf(snapshot) }

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ShortKey is the form shown to humans: the first 12 characters and the last 4.
func ShortKey(key string) string {
	if len(key) <= 16 {
		return key
	}
	return key[:12] + "…" + key[len(key)-4:]
}

// ValidClientKey reports whether a client-sent key is 8 to 255 printable
// ASCII characters.
func ValidClientKey(key string) bool {
	if len(key) < 8 || len(key) > 255 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

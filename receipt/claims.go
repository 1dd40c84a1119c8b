package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/countersign/countersign/internal/intentkey"
)

// Claims are what a receipt asserts: which write was approved (Key, Tool,
// Agent, and EffectSHA256, the digest of the approved effect's canonical
// form), who decided it and how, under which policy, when, and until when
// a provider should take it.
type Claims struct {
	// Key is the request's idempotency key; the agent sends the write with
	// it as Idempotency-Key.
	Key   string `json:"key"`
	Tool  string `json:"tool"`
	Agent string `json:"agent"`
	// EffectSHA256 is the lowercase hex SHA-256 of the approved effect's
	// RFC 8785 form (the request's snapshot).
	EffectSHA256 string `json:"effect_sha256"`
	// DecidedBy is the decision's by (a reviewer, "policy:<tier>" or
	// "grant:<id>"); Via is how: human, policy or grant.
	DecidedBy string `json:"decided_by"`
	Via       string `json:"via"`
	// PolicyVersion is the digest of the tool's rules the request was
	// decided under ("" on requests older than policies).
	PolicyVersion string `json:"policy_version"`
	// IssuedAt is when the write was approved and Expiry when a provider
	// stops taking the receipt, in seconds since the Unix epoch.
	IssuedAt int64 `json:"iat"`
	Expiry   int64 `json:"exp"`
}

// EffectDigest returns the lowercase hex SHA-256 of a JSON text's RFC 8785
// form: what EffectSHA256 holds for the effect a provider received.
func EffectDigest(body []byte) (string, error) {
	canonical, err := intentkey.Canonicalize(body)
	if err != nil {
		return "", fmt.Errorf("receipt: the body is not one JSON value: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// ViaOf is how a decision came, as a receipt says it: "policy" and "grant"
// as they are, any surface a reviewer voted through (Slack, the inbox, a
// local reviewer) "human".
func ViaOf(decisionVia string) string {
	switch decisionVia {
	case "policy", "grant":
		return decisionVia
	}
	return "human"
}

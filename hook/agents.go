package hook

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/countersign/countersign/approvals"
)

// Agent is an agent the hook knows, by the sha256 of its bearer token.
type Agent struct {
	approvals.Agent
	TokenSHA256 [32]byte
}

// ParseAgent builds an Agent from its configured name and sha256 hex.
func ParseAgent(name, tokenSHA256Hex string) (Agent, error) {
	raw, err := hex.DecodeString(strings.TrimSpace(tokenSHA256Hex))
	if err != nil || len(raw) != sha256.Size {
		return Agent{}, fmt.Errorf("agent %q: token_sha256 must be 64 hex characters (the sha256 of the token)", name)
	}
	a := Agent{Agent: approvals.Agent{Name: name}}
	copy(a.TokenSHA256[:], raw)
	return a, nil
}

// Agents authenticates bearer tokens.
type Agents []Agent

// Authenticate returns the agent whose token is in the Authorization header.
// Every configured hash is compared in constant time, and all are compared,
// so timing reveals neither the token nor which agent matched.
func (as Agents) Authenticate(authorization string) (approvals.Agent, bool) {
	// RFC 6750: the scheme is case-insensitive, then one or more spaces.
	scheme, token, ok := strings.Cut(authorization, " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return approvals.Agent{}, false
	}
	sum := sha256.Sum256([]byte(token))
	var agent approvals.Agent
	found := 0
	for _, a := range as {
		if subtle.ConstantTimeCompare(sum[:], a.TokenSHA256[:]) == 1 {
			agent, found = a.Agent, 1
		}
	}
	return agent, found == 1
}

// hasCallback reports whether the agent called name has a callback configured.
func (as Agents) hasCallback(name string) bool {
	for _, a := range as {
		if a.Name == name {
			return a.Callback
		}
	}
	return false
}

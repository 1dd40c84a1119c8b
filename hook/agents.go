package hook

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/countersign/countersign/approvals"
)

// Agent is an agent the hook knows, by the sha256 of its bearer tokens:
// usually one, several while a token is rotated. Any of them identifies it.
type Agent struct {
	approvals.Agent
	TokenHashes [][32]byte
}

// ParseAgent builds an Agent from its configured name and the sha256 hex of
// each of its tokens.
func ParseAgent(name string, tokenSHA256Hex ...string) (Agent, error) {
	if len(tokenSHA256Hex) == 0 {
		return Agent{}, fmt.Errorf("agent %q: token_sha256 is required (the sha256 of the token, or a list of them while one is rotated)", name)
	}
	a := Agent{Agent: approvals.Agent{Name: name}}
	var errs []error
	for i, h := range tokenSHA256Hex {
		raw, err := hex.DecodeString(strings.TrimSpace(h))
		if err != nil || len(raw) != sha256.Size {
			what := "token_sha256"
			if len(tokenSHA256Hex) > 1 {
				what = fmt.Sprintf("token_sha256 value %d of %d", i+1, len(tokenSHA256Hex))
			}
			errs = append(errs, fmt.Errorf("agent %q: %s must be 64 hex characters (the sha256 of the token)", name, what))
			continue
		}
		a.TokenHashes = append(a.TokenHashes, [32]byte(raw))
	}
	if len(errs) > 0 {
		return Agent{}, errors.Join(errs...)
	}
	return a, nil
}

// Agents authenticates bearer tokens.
type Agents []Agent

// Authenticate returns the agent one of whose tokens is in the Authorization
// header. Every configured hash of every agent is compared in constant time,
// and all are compared, so timing reveals neither the token nor which agent,
// or which of its tokens, matched.
func (as Agents) Authenticate(authorization string) (approvals.Agent, bool) {
	agent, _, ok := as.authenticate(authorization)
	return agent, ok
}

// authenticate is Authenticate that also returns the token's sha256: on
// success, the configured hash that matched.
func (as Agents) authenticate(authorization string) (approvals.Agent, [32]byte, bool) {
	// RFC 6750: the scheme is case-insensitive, then one or more spaces.
	scheme, token, ok := strings.Cut(authorization, " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return approvals.Agent{}, [32]byte{}, false
	}
	sum := sha256.Sum256([]byte(token))
	var agent approvals.Agent
	found := 0
	for _, a := range as {
		for _, h := range a.TokenHashes {
			if subtle.ConstantTimeCompare(sum[:], h[:]) == 1 {
				agent, found = a.Agent, 1
			}
		}
	}
	return agent, sum, found == 1
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

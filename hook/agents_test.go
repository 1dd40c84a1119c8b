package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// While an agent's token is rotated it lists both hashes: the old token and
// the new one each identify it (and no other agent), and once the old hash
// is removed the old token is refused.
func TestAgentTokenRotation(t *testing.T) {
	t.Parallel()
	during, err := ParseAgent("billing-agent", tokenHash("billing-old"), tokenHash("billing-new"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParseAgent("crm-agent", tokenHash("crm-token"))
	if err != nil {
		t.Fatal(err)
	}
	overlap := Agents{during, other}
	for token, want := range map[string]string{"billing-old": "billing-agent", "billing-new": "billing-agent", "crm-token": "crm-agent"} {
		if agent, ok := overlap.Authenticate("Bearer " + token); !ok || agent.Name != want {
			t.Errorf("during the overlap, %s authenticates as %q (%v), want %s", token, agent.Name, ok, want)
		}
	}
	if agent, ok := overlap.Authenticate("Bearer billing-older"); ok {
		t.Errorf("a token in no list authenticates as %q", agent.Name)
	}

	after, err := ParseAgent("billing-agent", tokenHash("billing-new"))
	if err != nil {
		t.Fatal(err)
	}
	removed := Agents{after, other}
	if agent, ok := removed.Authenticate("Bearer billing-old"); ok {
		t.Errorf("the removed token still authenticates as %q", agent.Name)
	}
	if agent, ok := removed.Authenticate("Bearer billing-new"); !ok || agent.Name != "billing-agent" {
		t.Errorf("the new token authenticates as %q (%v)", agent.Name, ok)
	}
}

// Every hash of the list is checked, and the problem names which one is
// wrong without repeating it.
func TestParseAgentNamesTheBadHash(t *testing.T) {
	t.Parallel()
	_, err := ParseAgent("billing-agent", tokenHash("billing-old"), "not-a-hash-value")
	if err == nil || !strings.Contains(err.Error(), "token_sha256 value 2 of 2 must be 64 hex characters") ||
		strings.Contains(err.Error(), "not-a-hash-value") {
		t.Errorf("err = %v, want value 2 named", err)
	}
	if _, err := ParseAgent("billing-agent"); err == nil || !strings.Contains(err.Error(), "token_sha256 is required") {
		t.Errorf("no hash: err = %v", err)
	}
	if _, err := ParseAgent("billing-agent", "abc"); err == nil || !strings.Contains(err.Error(), `agent "billing-agent": token_sha256 must be 64 hex`) {
		t.Errorf("one bad hash: err = %v", err)
	}
}

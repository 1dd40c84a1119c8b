package mcpserver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/mcpserver"
)

// A session id opened by one server is checked by any other that shares
// the secret (another replica, or this one restarted), stays its agent's,
// ends after its lifetime, and cannot be forged or altered.
func TestSessionIDsAreSelfDescribingAndSigned(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	secret := []byte("a secret every replica is given")
	a, b := mcpserver.NewSessionIDs([][]byte{secret}), mcpserver.NewSessionIDs([][]byte{secret})
	id := a.Issue("billing-agent", now)
	if id == a.Issue("billing-agent", now) {
		t.Error("two sessions opened in one second share an id")
	}
	for _, c := range []struct {
		name  string
		ids   *mcpserver.SessionIDs
		id    string
		agent string
		at    time.Time
		want  error
	}{
		{"another replica", b, id, "billing-agent", now.Add(time.Minute), nil},
		{"rotated in", mcpserver.NewSessionIDs([][]byte{[]byte("the new secret"), secret}), id, "billing-agent", now, nil},
		{"another agent", b, id, "other-agent", now, mcpserver.ErrSessionOfAnotherAgent},
		{"a prefix of the agent", b, id, "billing", now, mcpserver.ErrSessionOfAnotherAgent},
		{"past its lifetime", b, id, "billing-agent", now.Add(mcpserver.SessionLifetime), mcpserver.ErrSessionUnknown},
		{"from the future", b, id, "billing-agent", now.Add(-2 * time.Minute), mcpserver.ErrSessionUnknown},
		{"another secret", mcpserver.NewSessionIDs([][]byte{[]byte("another secret")}), id, "billing-agent", now, mcpserver.ErrSessionUnknown},
		{"no secret", mcpserver.NewSessionIDs(nil), id, "billing-agent", now, mcpserver.ErrSessionUnknown},
		{"altered", b, strings.Replace(id, ".", ".A", 1), "billing-agent", now, mcpserver.ErrSessionUnknown},
		{"a random id", b, "0f3c9a2e-5d1b-4f7e-9c8a-1b2c3d4e5f60", "billing-agent", now, mcpserver.ErrSessionUnknown},
		{"too long", b, id + strings.Repeat("A", 600), "billing-agent", now, mcpserver.ErrSessionUnknown},
	} {
		if err := c.ids.Check(c.id, c.agent, c.at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// An id opened by a server without a secret is its own.
	alone := mcpserver.NewSessionIDs(nil)
	if err := alone.Check(alone.Issue("billing-agent", now), "billing-agent", now); err != nil {
		t.Errorf("a server without a secret refuses its own session: %v", err)
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			t.Fatalf("the id %q holds %q, not a visible ASCII character", id, r)
		}
	}
}

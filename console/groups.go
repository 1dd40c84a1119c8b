package console

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/identity"
)

// groupIDPrefix begins an OpenID Connect group's id.
const groupIDPrefix = string(identity.OIDC) + ":" + identity.OIDCGroupPrefix

type reviewerKey struct{}

// withReviewer puts a signed-in reviewer in ctx: Groups answers their
// groups from it, as the ID token listed them at sign-in.
func withReviewer(ctx context.Context, s claims) context.Context {
	return context.WithValue(ctx, reviewerKey{}, s)
}

// Groups resolves oidc:group:<name> for approvals.Service: its members are
// the people Members lists for the name (or SetMembers, after a
// configuration reload), and the reviewer deciding in the console when
// their ID token listed the group. Any other group goes to Next (Slack's
// resolver, or nil: no members). Use it as a pointer.
type Groups struct {
	Members map[string][]string // as configured at start
	Next    approvals.GroupResolver

	reloaded atomic.Pointer[map[string][]string]
}

// SetMembers replaces the hand-kept members (console.groups) with those
// of a reloaded configuration: from the next check on, someone removed
// from a group no longer decides, nor sees, what the group approves.
func (g *Groups) SetMembers(members map[string][]string) {
	g.reloaded.Store(&members)
}

// members is the hand-kept membership in force.
func (g *Groups) members() map[string][]string {
	if p := g.reloaded.Load(); p != nil {
		return *p
	}
	return g.Members
}

// GroupMembers implements approvals.GroupResolver.
func (g *Groups) GroupMembers(ctx context.Context, groupID string) ([]string, error) {
	name, ok := strings.CutPrefix(groupID, groupIDPrefix)
	if !ok {
		if g.Next == nil {
			return nil, nil
		}
		return g.Next.GroupMembers(ctx, groupID)
	}
	members := slices.Clone(g.members()[name])
	if s, ok := ctx.Value(reviewerKey{}).(claims); ok && slices.Contains(s.Groups, name) {
		members = append(members, s.User)
	}
	return members, nil
}

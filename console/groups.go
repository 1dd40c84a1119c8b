package console

import (
	"context"
	"slices"
	"strings"

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
// the people Members lists for the name, and the reviewer deciding in the
// console when their ID token listed the group. Any other group goes to
// Next (Slack's resolver, or nil: no members).
type Groups struct {
	Members map[string][]string
	Next    approvals.GroupResolver
}

// GroupMembers implements approvals.GroupResolver.
func (g Groups) GroupMembers(ctx context.Context, groupID string) ([]string, error) {
	name, ok := strings.CutPrefix(groupID, groupIDPrefix)
	if !ok {
		if g.Next == nil {
			return nil, nil
		}
		return g.Next.GroupMembers(ctx, groupID)
	}
	members := slices.Clone(g.Members[name])
	if s, ok := ctx.Value(reviewerKey{}).(claims); ok && slices.Contains(s.Groups, name) {
		members = append(members, s.User)
	}
	return members, nil
}

package approvals

import "context"

// GroupResolver lists the members of a user group: an approver whose
// identity.ID.IsGroup, as printed (S0FINANCE), each member as printed too.
// The surface whose scheme the group is resolves it: Slack's, today the
// only one with groups, with usergroups.users.list and a short cache.
type GroupResolver interface {
	GroupMembers(ctx context.Context, groupID string) ([]string, error)
}

package approvals

import "context"

// GroupResolver lists the members of a Slack user group. The Slack surface
// implements it with usergroups.users.list and a short cache.
type GroupResolver interface {
	GroupMembers(ctx context.Context, groupID string) ([]string, error)
}

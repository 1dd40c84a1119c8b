package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// refusedLookupText answers a slash command from someone not in
// slack.lookup_allowed; it says nothing about what was asked for.
const refusedLookupText = "You are not allowed to look up requests. " +
	"Ask a countersign admin to add you, one of your user groups or this channel to `slack.lookup_allowed`. " +
	"(`/countersign help` still works.)"

// mayLookUp reports whether user, running the slash command in channel, may
// see request details: anyone when no allow list is set, else a listed user,
// a member of a listed user group, or anyone in a listed channel. User groups
// are resolved like approvers' groups, through the same short cache.
func (b *Bot) mayLookUp(ctx context.Context, user, channel string) (bool, error) {
	if len(b.lookupAllowed) == 0 {
		return true, nil
	}
	if user == "" {
		return false, nil
	}
	if slices.Contains(b.lookupAllowed, user) || (channel != "" && slices.Contains(b.lookupAllowed, channel)) {
		return true, nil
	}
	return b.inListedGroup(ctx, b.lookupAllowed, user)
}

// inListedGroup reports whether user is a member of one of the user groups
// among ids; without a way to resolve groups, of none.
func (b *Bot) inListedGroup(ctx context.Context, ids []string, user string) (bool, error) {
	if b.groups == nil {
		return false, nil
	}
	for _, id := range ids {
		if !strings.HasPrefix(id, "S") {
			continue
		}
		members, err := b.groups.GroupMembers(ctx, id)
		if err != nil {
			return false, fmt.Errorf("resolving user group %s: %w", id, err)
		}
		if slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, nil
}

package bot

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/sync/singleflight"
)

// DefaultGroupTTL is how long a user group's members are trusted: short, so
// removing someone from a group takes effect within a minute.
const DefaultGroupTTL = time.Minute

// lookupTimeout bounds one usergroups.users.list call; a click waits on it.
const lookupTimeout = 2 * time.Second

// Groups resolves Slack user groups with usergroups.users.list behind a
// short-TTL cache; it implements approvals.GroupResolver. Concurrent misses
// for one group make one call.
type Groups struct {
	slack *slack.Client
	ttl   time.Duration

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]groupEntry
}

type groupEntry struct {
	members []string
	expires time.Time
}

// NewGroups returns a resolver; ttl zero means DefaultGroupTTL.
func NewGroups(client *slack.Client, ttl time.Duration) *Groups {
	if ttl <= 0 {
		ttl = DefaultGroupTTL
	}
	return &Groups{slack: client, ttl: ttl, cache: make(map[string]groupEntry)}
}

// GroupMembers returns the user ids in a user group.
func (g *Groups) GroupMembers(ctx context.Context, groupID string) ([]string, error) {
	g.mu.Lock()
	e, ok := g.cache[groupID]
	g.mu.Unlock()
	if ok && time.Now().Before(e.expires) {
		return e.members, nil
	}
	v, err, _ := g.flight.Do(groupID, func() (any, error) {
		// Shared by every caller waiting on this group: one caller's
		// cancellation must not fail the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
		defer cancel()
		members, err := g.slack.GetUserGroupMembersContext(ctx, groupID)
		if err != nil {
			return nil, err
		}
		g.mu.Lock()
		g.cache[groupID] = groupEntry{members: members, expires: time.Now().Add(g.ttl)}
		g.mu.Unlock()
		return members, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]string), nil
}

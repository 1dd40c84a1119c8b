package bot

import "github.com/countersign/countersign/identity"

// Via is what decisions and resolutions made in Slack record as their
// channel.
const Via = "slack"

// slackID reads id as a Slack user or user group (identity.Slack), the only
// ids Slack can mention; any other (local:…, teams:…) is written out.
func slackID(id string) (identity.ID, bool) {
	parsed, err := identity.Parse(id)
	return parsed, err == nil && parsed.Scheme == identity.Slack
}

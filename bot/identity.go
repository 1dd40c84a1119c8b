package bot

import "github.com/countersign/countersign/identity"

// Via is what decisions and resolutions made in Slack record as their
// channel: the surface's own name, so the audit and the ledger's cards
// name Slack alike.
const Via = SurfaceName

// slackID reads id as a Slack user or user group (identity.Slack), the only
// ids Slack can mention; any other (local:…, teams:…) is written out.
func slackID(id string) (identity.ID, bool) {
	parsed, err := identity.Parse(id)
	return parsed, err == nil && parsed.Scheme == identity.Slack
}

// Package teamssurface is the Microsoft Teams review surface: each tool
// whose requests go to Teams has a conversation (a channel) its cards are
// posted in, through the Bot Connector's REST API, as Adaptive Cards with
// two Action.Execute buttons, approve and reject. A click comes back as an
// invoke activity (adaptiveCard/action) that decides through
// approvals.Service as a Slack click does (Via "teams", the reviewer
// teams:<Entra object id>), so the first decision wins wherever it is
// made; the invoke is answered with the card as it now stands.
//
// Every activity is authenticated as the Bot Framework does: its bearer
// token must be signed (RS256) by a key of the Bot Framework's OpenID
// metadata (fetched and cached), issued by https://api.botframework.com
// for the bot's app id, current, and name the activity's serviceUrl. An
// activity that fails any of these is answered 401 and decides nothing.
//
// Outgoing calls carry a token the bot gets with its own client
// credentials. A card's ref is conversationId/activityId: Update replaces
// the activity, Reply answers in its thread. The connector cannot be
// searched, so Find and FindReply answer "not found": a post whose outcome
// was lost is posted again.
package teamssurface

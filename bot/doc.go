// Package bot is countersign's Slack reviewer surface.
//
// A worker delivers the outbox (DeliverOnce): it posts one approval card per
// request round, updates it as the request and its execution move, and
// replies in the card's thread when a write fails or needs a human. Cards are
// always rendered from the database (request, the round's decision and
// execution), never from the outbox row, and carry message metadata
// (event_type countersign_card, the key and round) so a post whose outcome is
// unknown is found again in the channel's history rather than posted twice. A
// convergence sweep (ConvergeOnce) re-queues cards whose last update did not
// land.
//
// Clicks arrive at POST /slack/interactions (Interactions) and lookups at
// POST /slack/commands (Commands), both signed with Slack's v0 HMAC and
// checked before anything is parsed; Socket Mode (RunSocketMode) serves the
// same handlers without a public URL. Decisions go through approvals.Service
// synchronously; the answer to the clicker is an ephemeral message.
package bot

// Package bot is countersign's Slack reviewer surface: the first adapter
// of the review-surface port (Surface, a surface.Adapter), and the clicks
// and slash commands that come back from Slack.
//
// The outbox loop (DeliverOnce, a surface.Deliverer on the delivery
// worker) delivers to Slack and to any surface in Config.Surfaces: it posts
// one approval card per request round, updates it as the request and its
// execution move, and replies in the card's thread when a write fails or
// needs a human. A card is recorded under the ref "channel/ts". Cards are
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
//
// The bot reaches the ledger only through the services it is given: a
// Reviewer (approvals.Service) for decisions, Cards (the store's outbox and
// card records, behind an interface the bot declares) and a Lookup
// (lookup.Service) for the slash command. Start runs the outbox loop and
// Socket Mode; Stop waits for them and for the answers in flight.
//
// Choices where the design is silent:
//
//   - Delivery is at least once. A claim leases a row (next_attempt_at moves
//     forward and attempts counts claims) instead of holding a transaction
//     across the Slack call; a crashed worker's rows return when the lease
//     ends. A post row claimed before (unless Slack answered 429, which
//     certainly did not post) or with a sibling post row for the same round
//     first looks for its card in the channel's last 600 messages by
//     metadata. If two workers still post the same round, the first recorded
//     card stands and the other is deleted.
//   - Each card remembers the state it shows (cards.rendered_state, from the
//     SQL function countersign_card_state). An update whose state the card
//     already shows is not sent, and the sweep compares the two to find cards
//     that fell behind, whatever the reason. Settled cards (decided and done,
//     or over) leave the sweep's index.
//   - Errors: 429 pauses the channel for Retry-After (at least 1 s) and never
//     fails a row; 5xx, timeouts and Slack's internal_error, fatal_error,
//     service_unavailable, request_timeout and ratelimited are retried with
//     jittered exponential backoff (2 s doubling to 5 min) for 40 attempts;
//     every other ok:false code fails the row at once, with the code on the
//     row and in the log. A failed post or update is tried again by the sweep
//     after ten minutes, except an update of a card someone deleted
//     (message_not_found), which is given up on.
//   - Posts (and thread replies) to one channel are spaced by one second per
//     replica; updates are not spaced and rely on 429 handling.
//   - Thread replies are at least once too: a crash between the reply and its
//     recording can repeat it.
//   - The clicker's answer is an ephemeral message (chat.postEphemeral) sent
//     after Slack has its 200, so a slow Slack API never delays the
//     acknowledgement. Identical clicks in flight on one replica share one
//     Decide call; the later ones are told "Already approved by …". A
//     refusal's words are approvals.RefusalFor's, the person it names shown
//     as a mention, and the click is counted under the refusal's code.
//   - /countersign answers ephemerally, and only those in
//     slack.lookup_allowed (Config.LookupAllowed): listed users, members of
//     listed user groups (resolved through the approvers' cache), and anyone
//     running it in a listed channel. Others are refused with a fixed text
//     that says nothing about what they asked for, and the refusal is logged
//     with their user and channel ids; help always answers. A group that
//     cannot be resolved refuses with "try again". Without the list everyone
//     in the workspace may look up, and serve warns at start. A lookup by a
//     value that is neither a key nor a UUID also tries it as a client-sent
//     key before searching effects; hex of 8 or more characters without wa_
//     is tried as a key prefix first, then as a business id.
//   - The card link is https://slack.com/archives/<channel>/p<ts>, which needs
//     no API call.
package bot

// Package emailsurface is the email review surface: each approver named
// email:<address> gets a message with the write and two links, approve and
// reject, that decide through approvals.Service as a Slack click does (Via
// "email", the reviewer email:<address>), so the first decision wins
// wherever it is made.
//
// A link is a token signed with a key derived from the dispatch secret
// (every replica derives the same): it binds the request, its round and
// payload, the verdict, and the approver (as an HMAC of the address, so a
// forwarded link does not tell whom to claim to be), and it expires. A GET
// shows a confirmation page and decides nothing, so mail scanners that
// follow links decide nothing; only the page's POST decides, and only when
// the address typed on it is the one the message was sent to. A link is
// single-use by the ledger: an approver has one vote per round, so a
// second use finds the vote (or the decision) it made and changes
// nothing.
//
// Messages go out over SMTP with STARTTLS (required unless configured
// opportunistic) and, when configured, PLAIN authentication, never over
// plaintext except to a loopback server. A card's ref is the request and
// round; Message-IDs are derived from it, so a message sent again after
// an attempt whose outcome was lost carries the Message-ID of the first
// and threads (or is dropped as a duplicate) in the reviewer's client.
// SMTP cannot be asked what it delivered, so Find and FindReply answer
// "not found" and the resend is that deterministic message.
package emailsurface

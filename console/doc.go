// Package console is the production review console: server-rendered pages
// behind the organisation's OpenID Connect provider, where reviewers named
// oidc:<email or subject> (or in a group, oidc:group:<name>) see the
// pending requests they may decide, read one as a structure with its key,
// policy, votes and timeline, and approve or reject it, one at a time or in
// a batch confirmed on a page that lists exactly what will be approved,
// and list and revoke the standing grants on the requests they approve.
// Decisions go through the same approvals.Service path as a Slack click or
// the local inbox, so one decision wins wherever it is made.
//
// Sign-in is the authorization code flow with PKCE: /console/login keeps
// the state, the nonce and the PKCE verifier in a short-lived signed
// cookie, and /console/callback verifies the ID token (issuer, audience,
// expiry, nonce) with go-oidc. The session is a cookie signed with a key
// derived from the dispatch secret (so every replica accepts it), HttpOnly,
// SameSite=Lax, Secure when the callback is https, on Path /console/, and
// expiring; it carries the reviewer's id, their IdP groups, a CSRF token
// and, when it fits, the ID token for sign-out, which continues at the
// provider's end_session_endpoint when discovery lists one. Every unsafe request needs that token in its form and passes
// net/http's CrossOriginProtection. A reviewer who is not among a
// request's approvers gets 404 for its page and never sees it in the queue.
package console

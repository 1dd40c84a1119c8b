// Package inbox is a local review inbox: server-rendered pages that show the
// pending requests as their Slack cards do, decide them through the same
// approvals.Service path, follow an approved write to its outcome, and answer
// the same lookups as the /countersign slash command.
//
// Its one login is a local session: the handler makes a one-time entry link
// (EntryURL) that serve prints for the person at the terminal; opening it
// sets an HttpOnly, SameSite=Strict session cookie and spends the link, and
// every other request without that cookie gets 403. A process on this
// machine that forwards requests (a reverse proxy, a tunnel) therefore opens
// nothing by itself. Beside the session it serves loopback only: a peer that
// is not loopback, or a Host header that is not a loopback name or address,
// gets 403 (a DNS-rebinding page cannot pose as localhost), and every unsafe
// request passes net/http's CrossOriginProtection (a cross-site page cannot
// post a decision).
package inbox

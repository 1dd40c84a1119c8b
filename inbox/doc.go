// Package inbox is a local review inbox: server-rendered pages that show the
// pending requests as their Slack cards do, decide them through the same
// approvals.Service path, follow an approved write to its outcome, and answer
// the same lookups as the /countersign slash command.
//
// It has no login, so it serves loopback only: a request whose Host header is
// not a loopback name or address gets 403 (a DNS-rebinding page cannot pose
// as localhost), and every unsafe request passes net/http's
// CrossOriginProtection (a cross-site page cannot post a decision).
package inbox

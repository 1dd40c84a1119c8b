package reviewpage

// Notice is what a review page says after a redirect: only a code crosses
// the redirect, and the page words it, so a link cannot put text on it.
type Notice struct {
	Level   string // "ok", "warn" or "error"
	Code    string // the refusal's code, or the outcome's
	Message string
}

// Codes of a standing grant's revocation, on the inbox and the console.
const (
	NoticeRevoked    = "revoked"
	NoticeNotRevoked = "not_revoked"
	NoticeNoGrant    = "no_grant"
)

// GrantsNotice words a revocation's redirect code; noGrant is the page's
// sentence for a grant it does not show. Anything else is nil.
func GrantsNotice(code, noGrant string) *Notice {
	switch code {
	case NoticeRevoked:
		return &Notice{"ok", code, "The grant is revoked: the writes it covered ask for a decision again."}
	case NoticeNotRevoked:
		return &Notice{"warn", code, "That grant had already ended; nothing changed."}
	case NoticeNoGrant:
		return &Notice{"error", code, noGrant}
	}
	return nil
}

package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/approvals"
)

// grantsHelp is how the grants command is used.
const grantsHelp = "• `/countersign grants` — your live standing grants (everyone's, for an admin)\n" +
	"• `/countersign grants revoke <id>` — end one of them now"

// grantsCommand answers `/countersign grants [revoke <id>]` for user: a
// reviewer lists and revokes their own standing grants, an admin
// (slack.admins) everyone's.
func (b *Bot) grantsCommand(ctx context.Context, user string, args []string) string {
	admin, err := b.isAdmin(ctx, user)
	if err != nil {
		b.logger.Error("grants command admin check", slog.String("user", user), slog.String("error", err.Error()))
		return "countersign could not check who is an admin just now; please try again."
	}
	switch {
	case len(args) == 0:
		grants, err := b.review.Grants(ctx, user, admin)
		if err != nil {
			_, text := b.refused("listing grants", err)
			return text
		}
		return grantsText(grants, admin)
	case len(args) == 2 && args[0] == "revoke":
		return b.revokeGrant(ctx, user, args[1], admin)
	}
	return "*Standing grants*\n" + grantsHelp
}

// revokeGrant ends grant id as user and says what happened.
func (b *Bot) revokeGrant(ctx context.Context, user, id string, admin bool) string {
	g, revoked, err := b.review.RevokeGrant(ctx, id, user, admin)
	switch {
	case errors.Is(err, approvals.ErrNotFound):
		return "No grant of yours has the id `" + escape(id) + "`. `/countersign grants` lists them."
	case err != nil:
		_, text := b.refused("revoking a grant", err, slog.String("grant", id))
		return text
	case revoked:
		return fmt.Sprintf("Revoked grant `%s` of %s: %s now ask for a decision again.", g.ID, mention(g.Grantor), escape(approvals.GrantText(g)))
	case g.RevokedAt != nil:
		return fmt.Sprintf("Grant `%s` was already revoked by %s at %s; nothing changed.", g.ID, mention(g.RevokedBy), clock(*g.RevokedAt))
	}
	return fmt.Sprintf("Grant `%s` already ended at %s; nothing changed.", g.ID, clock(g.ExpiresAt))
}

// grantsText lists live grants, one line each, with how to end one.
func grantsText(grants []approvals.Grant, admin bool) string {
	if len(grants) == 0 {
		if admin {
			return "No standing grant is live."
		}
		return "You have no live standing grant."
	}
	var sb strings.Builder
	if admin {
		sb.WriteString("*Live standing grants* (everyone's, newest first):\n")
	} else {
		sb.WriteString("*Your live standing grants* (newest first):\n")
	}
	for _, g := range grants {
		fmt.Fprintf(&sb, "• `%s` by %s: %s, until %s\n", g.ID, mention(g.Grantor), escape(approvals.GrantText(g)), clock(g.ExpiresAt))
	}
	sb.WriteString("End one with `/countersign grants revoke <id>`.")
	return sb.String()
}

// isAdmin reports whether user is one of slack.admins, directly or through
// a listed user group.
func (b *Bot) isAdmin(ctx context.Context, user string) (bool, error) {
	if user == "" || len(b.admins) == 0 {
		return false, nil
	}
	if slices.Contains(b.admins, user) {
		return true, nil
	}
	return b.inListedGroup(ctx, b.admins, user)
}

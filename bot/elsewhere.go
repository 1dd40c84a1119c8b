package bot

import (
	"context"

	"github.com/countersign/countersign/surface"
)

// elsewhere refuses a decision on a request whose tool's surfaces leave
// Slack out (surface.Decides): its outcome label and answer, and true.
// A request it cannot read is left to the decision, which says why.
func (b *Bot) elsewhere(ctx context.Context, requestID string) (outcome, answer string, refused bool) {
	req, err := b.db.RequestByID(ctx, requestID)
	if err != nil {
		return "", "", false
	}
	if tool, ok := b.review.Tool(req.Tool); !ok || surface.Decides(tool, SurfaceName) {
		return "", "", false
	}
	ref := surface.NotReviewedHere("Slack")
	return ref.Code, refusalText(ref), true
}

package teamssurface

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// adapter is the Teams surface as a surface.Adapter.
type adapter struct{ t *Teams }

func (a adapter) Name() string { return Name }

// Destination is the tool's conversation.
func (a adapter) Destination(tool string) string { return a.t.cfg.Conversation(tool) }

// DestinationOf is the conversation the card is in.
func (a adapter) DestinationOf(ref string) string {
	if skipped(ref) {
		return "skipped"
	}
	conv, _ := splitRef(ref)
	return conv
}

// errNoConversation is a tool with no Teams conversation.
var errNoConversation = errors.New("the tool has no Teams conversation (teams.conversations)")

// Post sends the round's card to the conversation; a tool whose requests
// do not go to Teams gets a card that is not sent.
func (a adapter) Post(ctx context.Context, dest string, v surface.View) (string, error) {
	if !a.t.cfg.Uses(v.Request.Tool) {
		return fmt.Sprintf("%s%s/%d", skipPrefix, v.Request.ID, v.Round), nil
	}
	if dest == "" {
		return "", errNoConversation
	}
	id, err := a.t.call(ctx, http.MethodPost, activitiesPath(dest, ""), message(card(v, "")))
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", errors.New("the Bot Connector answered no activity id")
	}
	return cardRef(dest, id), nil
}

// Find answers none: the connector cannot be searched. Post sends again.
func (a adapter) Find(ctx context.Context, dest string, v surface.View, since time.Time) (string, error) {
	return "", nil
}

// Update replaces the card's activity with v's card.
func (a adapter) Update(ctx context.Context, ref string, v surface.View) error {
	if skipped(ref) {
		return nil
	}
	conv, id := splitRef(ref)
	act := message(card(v, ""))
	act["id"] = id
	_, err := a.t.call(ctx, http.MethodPut, activitiesPath(conv, id), act)
	var he *httpError
	if errors.As(err, &he) && he.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %w", surface.ErrCardGone, err)
	}
	return err
}

// Remove deletes the card's activity.
func (a adapter) Remove(ctx context.Context, ref string) error {
	if skipped(ref) {
		return nil
	}
	conv, id := splitRef(ref)
	_, err := a.t.call(ctx, http.MethodDelete, activitiesPath(conv, id), nil)
	return err
}

// Reply answers in the card's thread: a reminder, an escalation, or word
// of the write's failure.
func (a adapter) Reply(ctx context.Context, ref string, r surface.Reply) error {
	if skipped(ref) {
		return nil
	}
	conv, id := splitRef(ref)
	_, err := a.t.call(ctx, http.MethodPost, activitiesPath(conv, id),
		object{"type": "message", "replyToId": id, "textFormat": "plain", "text": replyText(r)})
	return err
}

func replyText(r surface.Reply) string {
	req := r.View.Request
	if kind, ok := r.Nudge(); ok {
		what := "Reminder"
		if kind == store.NudgeEscalation {
			what = "Escalation"
		}
		return fmt.Sprintf("%s: this request has waited since %s and is still pending; it expires at %s.",
			what, clock(req.RoundStartedAt), clock(req.ExpiresAt))
	}
	s := Outcome(r.View)
	if reason, _ := r.Row.Data["reason"].(string); reason != "" {
		s += " (" + plain(reason) + ")"
	}
	return s
}

// FindReply answers not found, as Find does.
func (a adapter) FindReply(ctx context.Context, ref string, r surface.Reply) (bool, error) {
	return false, nil
}

// Classify: 429 is a rate limit (Retry-After, else a second); another 4xx
// but 408 is permanent, as is a tool with no conversation; anything else
// transient.
func (a adapter) Classify(err error) *delivery.Failure {
	f := &delivery.Failure{Class: delivery.Transient, Reason: err.Error(), Err: err}
	var he *httpError
	switch {
	case errors.Is(err, errNoConversation):
		f.Class = delivery.Permanent
	case errors.As(err, &he):
		f.Code = he.Status
		switch {
		case he.Status == http.StatusTooManyRequests:
			f.Class, f.Reason, f.Delay = delivery.RateLimited, delivery.ReasonRateLimited, max(he.RetryAfter, time.Second)
		case he.Status >= 400 && he.Status < 500 && he.Status != http.StatusRequestTimeout && he.Status != http.StatusUnauthorized:
			f.Class = delivery.Permanent
		}
	}
	return f
}

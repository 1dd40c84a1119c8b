package emailsurface

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// adapter is the email surface as a surface.Adapter.
type adapter struct{ e *Email }

func (a adapter) Name() string { return Name }

// Destination is the tool: messages are paced per tool.
func (a adapter) Destination(tool string) string { return tool }

// DestinationOf is one lane for every card: replies (reminders, outcomes)
// are paced together, whatever the tool.
func (a adapter) DestinationOf(ref string) string { return "replies" }

// Post sends each email approver of the round its message with its two
// links; a tool whose requests do not go to email gets a card that is not
// sent.
func (a adapter) Post(ctx context.Context, dest string, v surface.View) (string, error) {
	ref := cardRef(v.Request.ID, v.Round)
	if !a.e.cfg.Uses(v.Request.Tool) {
		return skipPrefix + ref, nil
	}
	rcpts := addresses(v.Approvers)
	if len(rcpts) == 0 {
		a.e.log.Warn("no email approver for a tool whose requests go to email", "tool", v.Request.Tool, "key", v.Request.Key)
	}
	exp := a.e.now().Add(a.e.cfg.LinkTTL)
	err := a.e.deliver(ctx, "card", ref, rcpts, func(rcpt, msgID string) []byte {
		return a.e.cardMessage(v, rcpt, msgID, exp)
	})
	return ref, err
}

// Find answers none: SMTP cannot be asked what it delivered. Post sends
// again under the same Message-IDs.
func (a adapter) Find(ctx context.Context, dest string, v surface.View, since time.Time) (string, error) {
	return "", nil
}

// Update sends the approvers one follow-up once the round is no longer
// pending ("Decided: …"); the changes before (votes) and after (the
// write's progress) send nothing, so a reviewer gets at most two messages
// a round besides reminders.
func (a adapter) Update(ctx context.Context, ref string, v surface.View) error {
	if _, _, skipped := splitRef(ref); skipped || v.State == string(store.RequestPending) {
		return nil
	}
	return a.e.deliver(ctx, "decided", ref, addresses(v.Approvers), func(rcpt, msgID string) []byte {
		return a.e.decidedMessage(v, ref, rcpt, msgID)
	})
}

// Remove does nothing: a message cannot be taken back. Refs are
// deterministic, so two posts of one round record the same card.
func (a adapter) Remove(ctx context.Context, ref string) error { return nil }

// Reply sends the approvers a reminder, an escalation, or word that the
// write failed or needs review, in the card's thread.
func (a adapter) Reply(ctx context.Context, ref string, r surface.Reply) error {
	if _, _, skipped := splitRef(ref); skipped {
		return nil
	}
	return a.e.deliver(ctx, "reply"+strconv.FormatInt(r.Row.ID, 10), ref, addresses(r.View.Approvers), func(rcpt, msgID string) []byte {
		return a.e.replyMessage(r, ref, rcpt, msgID)
	})
}

// FindReply answers not found, as Find does.
func (a adapter) FindReply(ctx context.Context, ref string, r surface.Reply) (bool, error) {
	return false, nil
}

// Classify: a server refusing for good (5xx) or offering no STARTTLS is
// permanent; anything else (a timeout, a lost connection, 4xx) transient.
func (a adapter) Classify(err error) *delivery.Failure {
	class := delivery.Transient
	if errors.Is(err, errNoStartTLS) || permanentSMTP(err) {
		class = delivery.Permanent
	}
	return &delivery.Failure{Class: class, Reason: err.Error(), Err: err}
}

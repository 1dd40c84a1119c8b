package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// The reject modal's contract names: its callback id, and the block and
// action ids of the reason input.
const (
	CallbackReject = "countersign_reject"
	ReasonBlockID  = "reason"
	ReasonActionID = "reason"
)

// rejectMeta is what the modal carries from the click to its submission:
// the button's value and the channel to answer in.
type rejectMeta struct {
	decisionValue
	Channel string `json:"c"`
}

// asksReason reports whether a Reject click opens the reason modal: the
// tool asks for reasons and the click could still cast a vote. A click on a
// round that is no longer open, or by someone who may not vote, goes
// straight to decide, which answers it (and audits a refusal) without a
// modal in between.
func (b *Bot) asksReason(ctx context.Context, c click) bool {
	req, err := b.db.RequestByID(ctx, c.Decision.RequestID)
	if err != nil || req.Status != store.RequestPending || req.Round != c.Decision.Round || req.PayloadHash != c.Decision.PayloadHash {
		return false
	}
	tool, ok := b.review.Tool(req.Tool)
	if !ok || !tool.RejectReason.AsksReason() {
		return false
	}
	return b.review.MayVote(ctx, req, c.User, store.VerdictReject) == nil
}

// openRejectModal opens the reason form with the click's trigger id, which
// Slack honours for 3 seconds; the vote is cast when the form is submitted.
func (b *Bot) openRejectModal(ctx context.Context, c click) (outcome, answer string) {
	req, err := b.db.RequestByID(ctx, c.Decision.RequestID)
	if err != nil {
		return b.refused("opening the reject form", err, slog.String("request_id", c.Decision.RequestID))
	}
	tool, _ := b.review.Tool(req.Tool)
	meta, _ := json.Marshal(rejectMeta{decisionValue: c.Decision, Channel: c.Channel})
	input := slack.NewPlainTextInputBlockElement(plain("What should the agent know?"), ReasonActionID).
		WithMultiline(true).WithMaxLength(2000)
	reason := slack.NewInputBlock(ReasonBlockID, plain("Reason"), nil, input)
	reason.Optional = tool.RejectReason != approvals.ReasonRequired
	view := slack.ModalViewRequest{
		Type: slack.VTModal, CallbackID: CallbackReject, PrivateMetadata: string(meta),
		Title: plain("Reject request"), Submit: plain("Reject"), Close: plain("Cancel"),
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewSectionBlock(mrkdwn(cut(fmt.Sprintf("Reject `%s`: %s", approvals.ShortKey(req.Key), escape(req.Summary)), maxSectionText)), nil, nil),
			reason,
		}},
	}
	if b.slack == nil {
		return "no_slack", "The reject form cannot open on this server; ask an operator."
	}
	if _, err := b.slack.OpenViewContext(ctx, c.TriggerID, view); err != nil {
		b.logger.Warn("opening the reject form", slog.String("key", req.Key), slog.String("error", err.Error()))
		return "modal_failed", "The reject form could not open; click Reject again."
	}
	return "modal_opened", ""
}

// submissionPayload is the part of a view_submission payload the modal
// needs.
type submissionPayload struct {
	Type string `json:"type"`
	User struct {
		ID string `json:"id"`
	} `json:"user"`
	View struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		State           struct {
			Values map[string]map[string]struct {
				Value string `json:"value"`
			} `json:"values"`
		} `json:"state"`
	} `json:"view"`
}

// submitReject casts the reject vote a submitted modal carries, with its
// reason, and returns Slack's answer: nothing (the modal closes and the
// reviewer gets an ephemeral answer, as for a click) or the modal's field
// error. A modal submitted after the round was decided changes nothing and
// is answered like a late click.
func (b *Bot) submitReject(ctx context.Context, payload []byte) (outcome string, response []byte) {
	sub, err := parseSubmission(payload)
	switch {
	case errors.Is(err, errIgnored):
		return "ignored", nil
	case err != nil:
		return "malformed", nil
	}
	meta, reason := sub.Meta, sub.Reason
	if label, words, refused := b.elsewhere(ctx, meta.RequestID); refused {
		b.answer(meta.Channel, sub.User, words)
		return label, nil
	}
	out, err := b.review.Decide(ctx, approvals.Decision{
		RequestID: meta.RequestID, Round: meta.Round, PayloadHash: meta.PayloadHash,
		Verdict: store.VerdictReject, DecidedBy: sub.User, Via: Via, Reason: reason,
	})
	var input *approvals.InputError
	if errors.As(err, &input) {
		body, _ := json.Marshal(slack.NewErrorsViewSubmissionResponse(map[string]string{ReasonBlockID: input.Message}))
		return approvals.RefusalFor(err).Code, body
	}
	var answer string
	if err == nil && out.Err() == nil {
		outcome, answer = voteAnswer(out)
		if out.Created && strings.TrimSpace(reason) != "" {
			answer = strings.TrimSuffix(answer, " The card will follow the write.") + " Your reason is on the card."
		}
	} else {
		if err == nil {
			err = out.Err()
		}
		outcome, answer = b.refused("recording a decision", err, slog.String("request_id", meta.RequestID))
	}
	b.answer(meta.Channel, sub.User, answer)
	return outcome, nil
}

// submission is a submitted reject form: who, on which card, and why.
type submission struct {
	User   string
	Meta   rejectMeta
	Reason string
}

// parseSubmission reads a view_submission payload of the reject form;
// another view's is errIgnored.
func parseSubmission(payload []byte) (submission, error) {
	var p submissionPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return submission{}, fmt.Errorf("malformed view submission: %w", err)
	}
	if p.Type != string(slack.InteractionTypeViewSubmission) || p.View.CallbackID != CallbackReject {
		return submission{}, errIgnored
	}
	if p.User.ID == "" {
		return submission{}, errors.New("view submission without a user")
	}
	var meta rejectMeta
	if err := json.Unmarshal([]byte(p.View.PrivateMetadata), &meta); err != nil || meta.RequestID == "" || meta.Round < 1 || meta.PayloadHash == "" {
		return submission{}, errors.New("malformed reject form metadata")
	}
	return submission{User: p.User.ID, Meta: meta, Reason: p.View.State.Values[ReasonBlockID][ReasonActionID].Value}, nil
}

package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// ReplyEventType is the message metadata event type of every thread reply.
const ReplyEventType = "countersign_reply"

// nudgeText is a reminder or escalation: who is asked, how long the round
// has waited, and the short key.
func nudgeText(v surface.View, row store.OutboxRow) string {
	kind, _ := surface.Reply{Row: row}.Nudge()
	mentions, _ := row.Data["mention"].(string)
	var who []string
	for _, id := range strings.Fields(mentions) {
		who = append(who, mentionAny(id))
	}
	if len(who) == 0 {
		who = []string{"approvers"}
	}
	waited := "a while"
	if after, ok := row.Data["after"].(string); ok {
		if d, err := time.ParseDuration(after); err == nil {
			waited = "over " + shortDuration(d)
		}
	}
	key := approvals.ShortKey(v.Request.Key)
	if kind == store.NudgeEscalation {
		also := "please review it or find someone who can."
		if adds, _ := row.Data["adds_approvers"].(bool); adds {
			also = "you may now approve or reject it yourselves."
		}
		return fmt.Sprintf("Escalation: %s, this request (`%s`) has waited %s for a decision; %s",
			strings.Join(who, " "), key, waited, also)
	}
	return fmt.Sprintf("Reminder: %s, this request (`%s`) has waited %s for a decision. Expires %s.",
		strings.Join(who, " "), key, waited, slackDate(v.Request.ExpiresAt))
}

// mentionAny mentions a user (<@U…>) or a user group (<!subteam^S…>);
// anything else (a local reviewer) is written out, escaped.
func mentionAny(id string) string {
	return approverMention(id)
}

// replyMetadata marks a thread reply with its outbox row, so it can be
// found again (findReply).
func replyMetadata(req store.Request, row store.OutboxRow) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: ReplyEventType, EventPayload: map[string]any{
		"key": req.Key, "round": row.Round, "outbox_id": row.ID,
	}}
}

// FindReply reports whether the card's thread holds the reply of r's row
// already: an earlier attempt may have posted it and died before
// recording it.
func (s slackSurface) FindReply(ctx context.Context, ref string, r surface.Reply) (bool, error) {
	channel, ts := splitRef(ref)
	params := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: ts,
		Limit: historyPageLimit, IncludeAllMetadata: true}
	for range historyPages {
		msgs, hasMore, cursor, err := s.b.slack.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			if isReply(m.Metadata, r.Row.ID) {
				return true, nil
			}
		}
		if !hasMore || cursor == "" {
			break
		}
		params.Cursor = cursor
	}
	return false, nil
}

func isReply(md slack.SlackMetadata, outboxID int64) bool {
	if md.EventType != ReplyEventType {
		return false
	}
	switch id := md.EventPayload["outbox_id"].(type) {
	case float64:
		return int64(id) == outboxID
	case string:
		return id == strconv.FormatInt(outboxID, 10)
	}
	return false
}

// shortDuration writes d without its zero tail: 30m, 2h, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

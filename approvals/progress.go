package approvals

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/store"
)

// PolicyText words a request's policy for a card or a page: "needs 2
// approvals from S0FINLEADS, U024BE7LH". mention renders one approver (Slack
// mentions, inbox names); nil leaves the ids.
func PolicyText(p store.Policy, approvers []string, mention func(string) string) string {
	n := p.Needed()
	noun := "approval"
	if n > 1 {
		noun = "approvals"
	}
	names := make([]string, len(approvers))
	for i, a := range approvers {
		names[i] = a
		if mention != nil {
			names[i] = mention(a)
		}
	}
	text := fmt.Sprintf("needs %d %s", n, noun)
	if len(names) > 0 {
		text += " from " + strings.Join(names, ", ")
	}
	return text
}

// Progress words where an open round stands: "1 of 2 approvals: waiting
// for one more approver".
func Progress(p store.Policy, votes []store.Vote) string {
	n, got := p.Needed(), store.Approvals(votes)
	left := n - got
	switch {
	case left <= 0:
		return fmt.Sprintf("%d of %d approvals: approved", got, n)
	case left == 1:
		return fmt.Sprintf("%d of %d approvals: waiting for one more approver", got, n)
	default:
		return fmt.Sprintf("%d of %d approvals: waiting for %d more approvers", got, n, left)
	}
}

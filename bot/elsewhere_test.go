package bot_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/surfacetest"
)

// A click in Slack on a request whose tool's surfaces leave Slack out (a
// button value made up, or a card left from before the list changed)
// decides nothing: the clicker is told the tool is not reviewed in Slack.
func TestClickOnAToolNotInSlackDecidesNothing(t *testing.T) {
	t.Parallel()
	mem := surfacetest.New("memory")
	b := setup(t, &options{surfaces: []surface.Adapter{mem}, tools: map[string]approvals.Tool{
		"memory.only": {Name: "memory.only", Channel: billingChan, Approvers: []string{"UANA"}, RequestTTL: time.Hour, MaxAttempts: 1, Surfaces: []string{"memory"}},
	}})
	req := b.submit(intent{tool: "memory.only"})
	for _, action := range []string{bot.ActionApprove, bot.ActionReject} {
		if status := b.click("UANA", billingChan, action, decisionValue(req)); status != http.StatusOK {
			t.Fatalf("%s click: status %d", action, status)
		}
	}
	if got := b.request(req.ID).Status; got != store.RequestPending {
		t.Fatalf("the request is %s after Slack clicks, want pending", got)
	}
	if answers := b.ephemerals("UANA"); len(answers) != 2 || !hasAny(answers, "not reviewed in Slack") {
		t.Fatalf("the clicker's answers = %q, want two saying the tool is not reviewed in Slack", answers)
	}

	// The same clicker decides a tool on Slack.
	onSlack := b.submit(intent{n: 1})
	b.click("UANA", billingChan, bot.ActionApprove, decisionValue(onSlack))
	if got := b.request(onSlack.ID).Status; got != store.RequestApproved {
		t.Fatalf("the Slack tool's request is %s after the click, want approved", got)
	}
}

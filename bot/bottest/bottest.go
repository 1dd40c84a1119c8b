// Package bottest is the fake Slack Web API (bot/fakeslack) for tests of
// the Slack surface: New starts one that the test's end closes. Requests
// to countersign are signed by the tests themselves (Sign).
package bottest

import (
	"testing"

	"github.com/countersign/countersign/bot/fakeslack"
)

// The fake's types, under the names the tests use.
type (
	// Slack is the fake.
	Slack = fakeslack.Slack
	// Call is one request the fake received.
	Call = fakeslack.Call
	// Message is a message the fake holds.
	Message = fakeslack.Message
	// Failure is an answer the fake gives instead of doing the call.
	Failure = fakeslack.Failure
)

// New starts a fake Slack, closed when the test ends.
func New(t testing.TB) *Slack {
	s := fakeslack.Start()
	t.Cleanup(s.Close)
	return s
}

// The requests a test signs and sends to countersign as Slack would.
var (
	// Sign returns the headers Slack signs body with at a time.
	Sign = fakeslack.Sign
	// Signature is the v0 signature of body at a time.
	Signature = fakeslack.Signature
	// ClickPayload is a block_actions payload: user clicked a button.
	ClickPayload = fakeslack.ClickPayload
	// ClickPayloadWithTrigger is ClickPayload with a trigger id, for a
	// click that opens a modal.
	ClickPayloadWithTrigger = fakeslack.ClickPayloadWithTrigger
	// SubmissionPayload is a view_submission payload of a modal's text.
	SubmissionPayload = fakeslack.SubmissionPayload
	// ClickForm is the form body an interaction payload is posted in.
	ClickForm = fakeslack.ClickForm
	// CommandForm is the form body of a slash command.
	CommandForm = fakeslack.CommandForm
)

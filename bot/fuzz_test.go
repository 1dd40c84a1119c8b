package bot

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// parseClick never panics, and what it accepts is a complete click.
func FuzzParseClick(f *testing.F) {
	f.Add(bottest.ClickPayload("UANA", "C1", "approve", `{"r":"0b8f7c1e-3d1a-4c62-9d1e-5b0b6f3b7a10","n":1,"h":"sha256:00"}`))
	f.Add(bottest.ClickPayload("UANA", "C1", "mark_failed", `{"r":"0b8f7c1e-3d1a-4c62-9d1e-5b0b6f3b7a10","x":7}`))
	f.Add([]byte(`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"reject","value":"{\"r\":\"x\",\"n\":0}"}]}`))
	f.Add([]byte(`{"type":"view_submission"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := parseClick(payload)
		if err != nil {
			return
		}
		if c.User == "" {
			t.Fatal("accepted a click without a user")
		}
		switch c.ActionID {
		case ActionApprove, ActionReject:
			if c.Decision.RequestID == "" || c.Decision.Round < 1 || c.Decision.PayloadHash == "" {
				t.Fatalf("accepted an incomplete decision %+v", c.Decision)
			}
		case ActionMarkSucceeded, ActionMarkFailed, ActionResend:
			if c.Resolve.RequestID == "" || c.Resolve.ExecutionID < 1 {
				t.Fatalf("accepted an incomplete resolution %+v", c.Resolve)
			}
		default:
			t.Fatalf("accepted action %q", c.ActionID)
		}
	})
}

// parseSubmission never panics, and what it accepts names a user and a
// complete card.
func FuzzParseSubmission(f *testing.F) {
	view := []byte(`{"type":"modal","callback_id":"countersign_reject","private_metadata":"{\"r\":\"0b8f7c1e-3d1a-4c62-9d1e-5b0b6f3b7a10\",\"n\":1,\"h\":\"sha256:00\",\"c\":\"C1\"}"}`)
	f.Add(bottest.SubmissionPayload("UANA", view, ReasonBlockID, ReasonActionID, "wrong amount"))
	f.Add(bottest.SubmissionPayload("", view, ReasonBlockID, ReasonActionID, ""))
	f.Add([]byte(`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"countersign_reject","private_metadata":"{}"}}`))
	f.Add([]byte(`{"type":"view_submission","view":{"callback_id":"other"}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		sub, err := parseSubmission(payload)
		if err != nil {
			return
		}
		if sub.User == "" || sub.Meta.RequestID == "" || sub.Meta.Round < 1 || sub.Meta.PayloadHash == "" {
			t.Fatalf("accepted an incomplete submission %+v", sub)
		}
	})
}

// verify accepts exactly the signature Slack would send, in its window.
func FuzzVerify(f *testing.F) {
	const secret = "fuzz-secret"
	now := time.Now()
	good := bottest.Sign(secret, now, []byte("payload=x"))
	f.Add(good.Get("X-Slack-Request-Timestamp"), good.Get("X-Slack-Signature"), []byte("payload=x"))
	f.Add("1", "v0=", []byte(""))
	f.Add("", "v1=00", []byte("a"))
	f.Add("99999999999999999999", "v0=zz", []byte("a"))
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Slack-Request-Timestamp", ts)
		h.Set("X-Slack-Signature", sig)
		if !verify(h, body, secret) {
			return
		}
		// Hex is case-blind: the same MAC in capitals is the same signature.
		if want := bottest.Sign(secret, now, body); ts == want.Get("X-Slack-Request-Timestamp") && !strings.EqualFold(sig, want.Get("X-Slack-Signature")) {
			t.Fatalf("accepted a wrong signature %q", sig)
		}
	})
}

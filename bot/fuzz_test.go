package bot

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// ParseQuery never panics and never sends a short prefix or an oversize id to
// the database.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"", "help", "pending", "UNKNOWN", "wa_3fa9c2d1", "3fa9c2d1", "inv_8841",
		"wa_d0290121a…634c", "wa_d0290121a...634c", "wa_12", "`wa_3fa9c2d1e`", "two words",
		"0b8f7c1e-3d1a-4c62-9d1e-5b0b6f3b7a10", "wa_\x00\x01\x02\x03\x04\x05\x06\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q := ParseQuery(text)
		switch q.Kind {
		case QueryKey:
			if !strings.HasPrefix(q.Value, "wa_") || len(q.Value) < 3+minPrefix || !printableASCII(q.Value) {
				t.Fatalf("key query %q from %q", q.Value, text)
			}
		case QueryHexPrefix:
			if len(q.Value) < minPrefix || !isHex(q.Value) {
				t.Fatalf("hex query %q from %q", q.Value, text)
			}
		case QueryBusiness:
			if q.Value == "" || len(q.Value) > maxBusinessID {
				t.Fatalf("business query %q from %q", q.Value, text)
			}
		case QueryID:
			if !isUUID(q.Value) {
				t.Fatalf("id query %q from %q", q.Value, text)
			}
		case QueryHelp, QueryPending, QueryUnknown:
		default:
			t.Fatalf("unknown kind %q", q.Kind)
		}
		if utf8.ValidString(text) && q.Kind == QueryBusiness && !utf8.ValidString(q.Value) {
			t.Fatalf("business id %q is not valid UTF-8", q.Value)
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

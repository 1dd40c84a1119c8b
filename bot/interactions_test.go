package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// Four concurrent deliveries of the same click for each of 200 requests
// record exactly 200 decisions and produce exactly 200 card updates.
func TestConcurrentClicksRecordOneDecisionEach(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		const n = 200
		reqs := make([]store.Request, n)
		for i := range n {
			reqs[i] = b.submit(intent{n: i})
		}
		b.deliver()
		posts := b.fake.Count("chat.postMessage")

		var wg sync.WaitGroup
		statuses := make(chan int, 4*n)
		sem := make(chan struct{}, 16)
		for _, r := range reqs {
			body := bottest.ClickForm(bottest.ClickPayload("UANA", billingChan, "approve", decisionValue(r)))
			header := bottest.Sign(secret, time.Now(), body)
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					status, _ := b.post("/slack/interactions", body, header)
					statuses <- status
				}()
			}
		}
		wg.Wait()
		close(statuses)
		for s := range statuses {
			if s != http.StatusOK {
				t.Fatalf("a click got status %d", s)
			}
		}
		if got := b.count(`SELECT count(*) FROM decisions`); got != n {
			t.Fatalf("%d decisions, want %d", got, n)
		}
		if got := b.count(`SELECT count(*) FROM outbox WHERE kind = 'update_card'`); got != n {
			t.Fatalf("%d card updates queued, want %d", got, n)
		}
		b.deliver()
		if got := b.fake.Count("chat.update"); got != n {
			t.Fatalf("%d chat.update calls, want %d", got, n)
		}
		if got := b.fake.Count("chat.postMessage"); got != posts {
			t.Fatalf("clicks posted %d new messages", got-posts)
		}
		for _, r := range reqs[:10] {
			if ids := b.card(r.ID, 1).ActionIDs(); len(ids) != 0 {
				t.Fatalf("card of %s still has buttons %v", r.Key, ids)
			}
		}
		answers := b.ephemerals("UANA")
		if len(answers) != 4*n {
			t.Fatalf("%d ephemeral answers, want %d", len(answers), 4*n)
		}
		already := 0
		for _, a := range answers {
			if strings.HasPrefix(a, "Already approved by <@UANA> at ") && strings.HasSuffix(a, " UTC.") {
				already++
			}
		}
		if already != 3*n {
			t.Fatalf("%d 'already approved' answers, want %d", already, 3*n)
		}
	})
}

// Requests that fail the signature checks are refused before parsing, and the
// refusal never carries the signature the server computed.
func TestSignatureChecks(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{})
		payload := bottest.ClickPayload("UANA", billingChan, "approve", decisionValue(req))
		body := bottest.ClickForm(payload)
		now := time.Now()

		badSig := bottest.Sign(secret, now, body)
		badSig.Set("X-Slack-Signature", "v0="+strings.Repeat("ab", 32))
		tampered := []byte(strings.Replace(string(body), "UANA", "UBEN", 1))
		stale := now.Add(-6 * time.Minute)
		oversize := append(append([]byte{}, body...), []byte("&pad="+strings.Repeat("x", 300<<10))...)
		noHeaders := bottest.Sign(secret, now, body)
		noHeaders.Del("X-Slack-Signature")

		for _, tc := range []struct {
			name   string
			body   []byte
			header http.Header
			status int
			secret []byte // the body the server would have signed
			at     time.Time
		}{
			{"bad signature", body, badSig, 401, body, now},
			{"stale timestamp", body, bottest.Sign(secret, stale, body), 401, body, stale},
			{"tampered body", tampered, bottest.Sign(secret, now, body), 401, tampered, now},
			{"wrong secret", body, bottest.Sign("other-secret", now, body), 401, body, now},
			{"missing signature", body, noHeaders, 401, body, now},
			{"oversize body", oversize, bottest.Sign(secret, now, oversize), 413, oversize, now},
		} {
			for _, path := range []string{"/slack/interactions", "/slack/commands"} {
				status, out := b.post(path, tc.body, tc.header)
				if status != tc.status {
					t.Errorf("%s %s: status %d, want %d", tc.name, path, status, tc.status)
				}
				computed := strings.TrimPrefix(bottest.Signature(secret, tc.at, tc.secret), "v0=")
				if strings.Contains(out, computed) || strings.Contains(out, computed[:16]) {
					t.Errorf("%s %s: the answer contains the computed signature", tc.name, path)
				}
			}
		}
		if got := b.count(`SELECT count(*) FROM decisions`); got != 0 {
			t.Fatalf("%d decisions recorded from refused requests", got)
		}
	})
}

func TestClickAnswers(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.fake.SetGroup("S0FINANCE", "UCAT")

		// Not an approver: refused, audited, nothing recorded.
		r1 := b.submit(intent{n: 1})
		b.click("UZED", billingChan, "approve", decisionValue(r1))
		if !hasAny(b.ephemerals("UZED"), "not an approver") {
			t.Errorf("no 'not an approver' answer: %q", b.ephemerals("UZED"))
		}
		if b.count(`SELECT count(*) FROM events WHERE request_id = $1 AND kind = 'decision_refused' AND actor = 'UZED'`, r1.ID) != 1 {
			t.Error("the refused click was not audited")
		}

		// Self-approval: refused; the same person may still reject.
		r2 := b.submit(intent{n: 2, requestedFor: "UBEN"})
		b.click("UBEN", billingChan, "approve", decisionValue(r2))
		if !hasAny(b.ephemerals("UBEN"), "made for you") {
			t.Errorf("no self-approval answer: %q", b.ephemerals("UBEN"))
		}

		// Stale card: an old round or a different payload hash changes nothing.
		r3 := b.submit(intent{n: 3})
		stale, _ := json.Marshal(map[string]any{"r": r3.ID, "n": 1, "h": "sha256:" + strings.Repeat("0", 64)})
		b.click("UANA", billingChan, "approve", string(stale))
		if !hasAny(b.ephemerals("UANA"), "stale") {
			t.Errorf("no stale answer: %q", b.ephemerals("UANA"))
		}

		// Cancelled and expired requests.
		r4 := b.submit(intent{n: 4})
		b.cancel(r4)
		b.click("UANA", billingChan, "reject", decisionValue(r4))
		if !hasAny(b.ephemerals("UANA"), "is cancelled") {
			t.Errorf("no cancelled answer: %q", b.ephemerals("UANA"))
		}
		// Its TTL is 1 ms and it arrived an hour ago: it has expired by the
		// time of the click, however fast the click comes, and is unswept.
		r5 := b.submitAgo(time.Hour, intent{n: 5, tool: "fast.expiring"})
		b.click("UANA", billingChan, "approve", decisionValue(r5))
		if !hasAny(b.ephemerals("UANA"), "is expired") {
			t.Errorf("no expired answer: %q", b.ephemerals("UANA"))
		}

		// A rejection stands against a later approval.
		r6 := b.submit(intent{n: 6})
		b.click("UBEN", billingChan, "reject", decisionValue(r6))
		b.click("UANA", billingChan, "approve", decisionValue(r6))
		if !hasAny(b.ephemerals("UANA"), "Already rejected by <@UBEN> at ") {
			t.Errorf("no 'already rejected' answer: %q", b.ephemerals("UANA"))
		}
		if b.count(`SELECT count(*) FROM decisions`) != 1 {
			t.Fatalf("decisions = %d, want only the rejection", b.count(`SELECT count(*) FROM decisions`))
		}

		// Payloads that are not countersign buttons are acknowledged and ignored.
		for _, payload := range [][]byte{
			[]byte(`{"type":"view_submission","user":{"id":"UANA"}}`),
			bottest.ClickPayload("UANA", billingChan, "something_else", "{}"),
			bottest.ClickPayload("UANA", billingChan, "approve", "not json"),
			[]byte(`not json`),
		} {
			body := bottest.ClickForm(payload)
			if status, _ := b.post("/slack/interactions", body, bottest.Sign(secret, time.Now(), body)); status != 200 {
				t.Errorf("payload %s: status %d", payload, status)
			}
		}
	})
}

func TestGroupApprovers(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.fake.SetGroup("S0FINANCE", "UCAT", "UDAN")
		r1 := b.submit(intent{n: 1})
		r2 := b.submit(intent{n: 2})
		b.click("UCAT", billingChan, "approve", decisionValue(r1))
		b.click("UDAN", billingChan, "approve", decisionValue(r2))
		if got := b.count(`SELECT count(*) FROM decisions`); got != 2 {
			t.Fatalf("%d decisions by group members, want 2", got)
		}
		if n := b.fake.Count("usergroups.users.list"); n != 1 {
			t.Fatalf("usergroups.users.list called %d times, want 1 (cached)", n)
		}
	})
}

// fakeResolver records resolutions and refuses a second one.
type fakeResolver struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeResolver) Resolve(_ ctxT, requestID string, executionID int64, action, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) > 0 {
		return fmt.Errorf("resolving: execution %d is not in needs_review", executionID)
	}
	f.calls = append(f.calls, fmt.Sprintf("%s/%d/%s/%s", requestID, executionID, action, by))
	return nil
}

type ctxT = context.Context

// Different approvers clicking at once (nothing to share in-process): the
// database lets exactly one decision stand per request and everyone else is
// told who won.
func TestConcurrentClicksByDifferentApprovers(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.fake.SetGroup("S0FINANCE", "UCAT")
		const n = 100
		reqs := make([]store.Request, n)
		for i := range n {
			reqs[i] = b.submit(intent{n: i})
		}
		clickers := []struct{ user, action string }{{"UANA", "approve"}, {"UBEN", "reject"}, {"UCAT", "approve"}, {"UBEN", "approve"}}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for _, r := range reqs {
			for _, c := range clickers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					if status := b.click(c.user, billingChan, c.action, decisionValue(r)); status != http.StatusOK {
						t.Errorf("click status %d", status)
					}
				}()
			}
		}
		wg.Wait()
		if got := b.count(`SELECT count(*) FROM decisions`); got != n {
			t.Fatalf("%d decisions, want %d", got, n)
		}
		if got := b.count(`SELECT count(*) FROM outbox WHERE kind = 'update_card'`); got != n {
			t.Fatalf("%d card updates, want %d", got, n)
		}
		if got := b.count(`SELECT count(*) FROM executions`); got != b.count(`SELECT count(*) FROM decisions WHERE verdict = 'approve'`) {
			t.Fatalf("%d executions for the approvals", got)
		}
		b.bot.Wait()
		var won, told int
		for _, c := range b.fake.Calls("chat.postEphemeral") {
			switch text := c.Form.Get("text"); {
			case strings.HasPrefix(text, "You approved"), strings.HasPrefix(text, "You rejected"):
				won++
			case strings.HasPrefix(text, "Already "):
				told++
			default:
				t.Errorf("unexpected answer %q", text)
			}
		}
		if won != n || told != 3*n {
			t.Fatalf("%d winners and %d told, want %d and %d", won, told, n, 3*n)
		}
	})
}

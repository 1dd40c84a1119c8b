package bot_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// grantTools are tools with standing grants: billing.grant matches the
// customer and caps the amount, and needs two approvals above 1000.00;
// billing.pair always needs two.
var grantTools = map[string]approvals.Tool{
	"billing.grant": {Name: "billing.grant", Channel: billingChan, Approvers: []string{"UANA", "UBEN"}, MaxAttempts: 5,
		Grants: &approvals.GrantRule{MaxTTL: 8 * time.Hour, Match: []string{"customer"}, Amount: "amount_cents"},
		Tiers:  []approvals.Tier{{Name: "large", When: approvals.Condition{Field: "amount_cents", Op: approvals.OpGT, Value: json.Number("100000")}, Approvals: 2}}},
	"billing.pair": {Name: "billing.pair", Channel: billingChan, Approvers: []string{"UANA", "UBEN"}, Approvals: 2,
		Grants: &approvals.GrantRule{MaxTTL: time.Hour, Match: []string{"customer"}}},
}

// credit submits a billing.grant intent for customer and amount as step n.
func (b *bundle) credit(n int, customer string, amount int) store.Request {
	b.t.Helper()
	return b.submit(intent{tool: "billing.grant", n: n,
		effect: fmt.Sprintf(`{"customer":%q,"amount_cents":%d,"currency":"USD"}`, customer, amount)})
}

// grantByClick submits a credit, delivers its card and clicks its
// "Approve + allow similar" button as UANA, and returns the grant.
func (b *bundle) grantByClick(n int, customer string, amount int) (store.Request, store.Grant) {
	b.t.Helper()
	req := b.credit(n, customer, amount)
	b.deliver()
	card := b.card(req.ID, 1)
	if ids := card.ActionIDs(); !slices.Equal(ids, []string{bot.ActionApprove, bot.ActionApproveGrant, bot.ActionReject}) {
		b.t.Fatalf("card buttons = %v", ids)
	}
	if !strings.Contains(cardText(card), "Approve + allow similar for 8h") {
		b.t.Fatalf("the grant button's label: %s", cardText(card))
	}
	b.click("UANA", billingChan, bot.ActionApproveGrant, card.ButtonValue(bot.ActionApproveGrant))
	if got := b.ephemerals("UANA"); !hasAny(got, "allowed similar writes until") {
		b.t.Fatalf("grantor's answer = %q", got)
	}
	if got := b.request(req.ID).Status; got != store.RequestApproved {
		b.t.Fatalf("the granting request is %s", got)
	}
	grants, err := b.store.ListGrants(b.ctx, store.ListGrantsParams{Grantor: "UANA", Limit: 10})
	if err != nil || len(grants) == 0 {
		b.t.Fatalf("grants after the click = %v, %v", grants, err)
	}
	return req, grants[0]
}

// executions counts a request's executions.
func (b *bundle) executions(req store.Request) int {
	b.t.Helper()
	return b.count(`SELECT count(*) FROM executions WHERE request_id = $1`, req.ID)
}

// A grant made by a click approves a later intent of the same agent and
// tool whose customer matches and whose amount is at most the granted one:
// decided by grant:<id> via grant at intake, its execution created, its
// card naming the grantor; a different customer or a larger amount, or a
// tier that needs two approvals, still asks.
func TestGrantApprovesOnlyMatchingIntents(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, tools: grantTools})
		src, g := b.grantByClick(0, "cus_1", 4200)
		if g.Tool != "billing.grant" || g.Agent != "billing-agent" || g.Grantor != "UANA" || g.RequestID != src.ID ||
			string(g.Match["customer"]) != `"cus_1"` || g.AmountCeiling == nil || *g.AmountCeiling != "4200" ||
			g.ExpiresAt.Sub(g.CreatedAt) != 8*time.Hour {
			t.Fatalf("grant = %+v", g)
		}
		if b.executions(src) != 1 {
			t.Fatalf("the granting approval made %d executions", b.executions(src))
		}

		covered := b.credit(1, "cus_1", 4200)
		if covered.Status != store.RequestApproved {
			t.Fatalf("a matching intent is %s", covered.Status)
		}
		d, err := b.store.DecisionFor(b.ctx, covered.ID, 1)
		if err != nil || d.DecidedBy != "grant:"+g.ID || d.Via != approvals.ViaGrant {
			t.Fatalf("decision = %+v, %v", d, err)
		}
		if b.executions(covered) != 1 {
			t.Errorf("the covered intent has %d executions", b.executions(covered))
		}
		if n := b.count(`SELECT count(*) FROM events WHERE request_id = $1 AND kind = 'decided' AND CAST(data AS text) LIKE '%UANA%'`, covered.ID); n != 1 {
			t.Errorf("the decision's audit event does not name the grantor (%d)", n)
		}
		if smaller := b.credit(2, "cus_1", 100); smaller.Status != store.RequestApproved {
			t.Errorf("a smaller amount is %s", smaller.Status)
		}
		b.deliver()
		card := b.card(covered.ID, 1)
		if text := cardText(card); !strings.Contains(text, "by standing grant `"+g.ID+"` of \\u003c@UANA\\u003e") {
			t.Errorf("the covered card does not name the grant: %s", text)
		}
		if ids := card.ActionIDs(); len(ids) != 0 {
			t.Errorf("the covered card has buttons %v", ids)
		}

		for _, c := range []struct {
			name     string
			customer string
			amount   int
		}{{"another customer", "cus_2", 4200}, {"a larger amount", "cus_1", 4201}, {"a two-approval tier", "cus_1", 200000}} {
			req := b.credit(10+len(c.name), c.customer, c.amount)
			if req.Status != store.RequestPending {
				t.Errorf("%s: %s, want pending", c.name, req.Status)
			}
			if _, err := b.store.DecisionFor(b.ctx, req.ID, 1); err == nil {
				t.Errorf("%s: decided", c.name)
			}
		}
		if n := b.count(`SELECT count(*) FROM grants`); n != 1 {
			t.Errorf("grants = %d", n)
		}
	})
}

// A grant approves nothing once it has expired, nor once its grantor has
// revoked it with the slash command; a second revocation changes nothing,
// and nobody else may revoke it.
func TestGrantEndsAtExpiryAndRevocation(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, tools: grantTools})
		_, g := b.grantByClick(0, "cus_1", 4200)

		// Past the grant's end by the review clock (the request's own
		// expiry moves with it).
		b.review.Now = func() time.Time { return g.ExpiresAt.Add(time.Second) }
		late := b.credit(1, "cus_1", 4200)
		b.review.Now = nil
		if late.Status != store.RequestPending {
			t.Fatalf("an intent after the grant's expiry is %s", late.Status)
		}
		if live := b.credit(2, "cus_1", 4200); live.Status != store.RequestApproved {
			t.Fatalf("an intent within the grant is %s", live.Status)
		}

		if got := b.command("UANA", "grants"); !strings.Contains(got, g.ID) || !strings.Contains(got, `customer is "cus_1"`) {
			t.Errorf("/countersign grants = %q", got)
		}
		if got := b.command("UBEN", "grants"); strings.Contains(got, g.ID) {
			t.Errorf("another reviewer's listing shows the grant: %q", got)
		}
		if got := b.command("UBEN", "grants revoke "+g.ID); !strings.Contains(got, "No grant of yours") {
			t.Errorf("another reviewer's revocation = %q", got)
		}
		if got := b.command("UANA", "grants revoke "+g.ID); !strings.Contains(got, "Revoked grant `"+g.ID+"`") {
			t.Fatalf("the grantor's revocation = %q", got)
		}
		if got := b.command("UANA", "grants revoke "+g.ID); !strings.Contains(got, "already revoked") {
			t.Errorf("a second revocation = %q", got)
		}
		if after := b.credit(3, "cus_1", 4200); after.Status != store.RequestPending {
			t.Fatalf("an intent after the revocation is %s", after.Status)
		}
		if n := b.count(`SELECT count(*) FROM events WHERE kind = 'grant_revoked'`); n != 1 {
			t.Errorf("revocations audited = %d", n)
		}
		if got := b.command("UANA", "grants"); strings.Contains(got, g.ID) {
			t.Errorf("a revoked grant is still listed: %q", got)
		}
	})
}

// An admin (slack.admins) lists and revokes everyone's grants.
func TestAdminRevokesAnyonesGrant(t *testing.T) {
	t.Parallel()
	b := setup(t, &options{tools: grantTools, admins: []string{"UADM"}})
	_, g := b.grantByClick(0, "cus_1", 4200)
	if got := b.command("UADM", "grants"); !strings.Contains(got, g.ID) || !strings.Contains(got, "everyone's") {
		t.Errorf("the admin's listing = %q", got)
	}
	if got := b.command("UADM", "grants revoke "+g.ID); !strings.Contains(got, "Revoked grant") {
		t.Fatalf("the admin's revocation = %q", got)
	}
	if after := b.credit(1, "cus_1", 4200); after.Status != store.RequestPending {
		t.Fatalf("an intent after the admin's revocation is %s", after.Status)
	}
}

// A round that needs two approvals offers no grant, and a click that asks
// for one anyway (a forged or stale button) is refused and records
// nothing; so is a grant on a tool without grants or longer than the
// tool's max_ttl.
func TestGrantIsRefusedWhereItCannotApply(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, tools: grantTools})
		forged := func(req store.Request, d time.Duration) string {
			v, _ := json.Marshal(map[string]any{"r": req.ID, "n": req.Round, "h": req.PayloadHash, "g": int64(d / time.Second)})
			return string(v)
		}
		pair := b.submit(intent{tool: "billing.pair", effect: `{"customer":"cus_1"}`})
		large := b.credit(1, "cus_1", 200000)
		plain := b.submit(intent{tool: "billing.credit", n: 2})
		long := b.credit(3, "cus_1", 4200)
		b.deliver()
		for _, req := range []store.Request{pair, large} {
			if ids := b.card(req.ID, 1).ActionIDs(); slices.Contains(ids, bot.ActionApproveGrant) {
				t.Errorf("%s: a two-approval round offers a grant: %v", req.Tool, ids)
			}
		}
		if ids := b.card(plain.ID, 1).ActionIDs(); slices.Contains(ids, bot.ActionApproveGrant) {
			t.Errorf("a tool without grants offers one: %v", ids)
		}
		for _, c := range []struct {
			req  store.Request
			d    time.Duration
			want string
		}{
			{pair, time.Hour, "needs 2 approvals"},
			{large, time.Hour, "needs 2 approvals"},
			{plain, time.Hour, "does not allow standing grants"},
			{long, 9 * time.Hour, "lasts at most 8h"},
		} {
			b.click("UBEN", billingChan, bot.ActionApproveGrant, forged(c.req, c.d))
			if got := b.ephemerals("UBEN"); !hasAny(got, c.want) {
				t.Errorf("%s: answer = %q, want %q", c.req.Tool, got, c.want)
			}
			if got := b.request(c.req.ID).Status; got != store.RequestPending {
				t.Errorf("%s: a refused grant left the request %s", c.req.Tool, got)
			}
		}
		if n := b.count(`SELECT count(*) FROM grants`) + b.count(`SELECT count(*) FROM votes`); n != 0 {
			t.Errorf("refused grants recorded %d rows", n)
		}
		// The two-approval round's grant is refused on its second,
		// deciding approval too: only the plain approvals decide it.
		b.click("UANA", billingChan, bot.ActionApprove, decisionValue(pair))
		b.click("UBEN", billingChan, bot.ActionApproveGrant, forged(pair, time.Hour))
		if got := b.request(pair.ID).Status; got != store.RequestPending {
			t.Errorf("a deciding approval asking for a grant on a two-approval round left it %s", got)
		}
		if next := b.submit(intent{tool: "billing.pair", n: 5, effect: `{"customer":"cus_1"}`}); next.Status != store.RequestPending {
			t.Errorf("a two-approval intent is %s", next.Status)
		}
	})
}

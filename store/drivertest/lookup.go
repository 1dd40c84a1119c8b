package drivertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func keysOf(reqs []store.Request) string {
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = r.Key
	}
	return strings.Join(keys, ",")
}

func testRequestsByKeyPrefix(t *testing.T, b *Backend) {
	ctx := context.Background()
	for _, key := range []string{"wa_abc2", "wa_abc1", "wa_abd", "wa_ab", "wa_ABC", "wa_abc~"} {
		insertRequest(t, b, key)
	}
	for prefix, want := range map[string]string{
		"wa_abc": "wa_abc1,wa_abc2,wa_abc~", // byte order; case matters
		"wa_ab":  "wa_ab,wa_abc1,wa_abc2,wa_abc~,wa_abd",
		"wa_A":   "wa_ABC",
		"wa_abe": "",
		"wa_a%":  "", // never a pattern
	} {
		got, err := b.RequestsByKeyPrefix(ctx, prefix, 10)
		if err != nil || keysOf(got) != want {
			t.Errorf("RequestsByKeyPrefix(%s) = %s, %v; want %s", prefix, keysOf(got), err, want)
		}
	}
	if got, _ := b.RequestsByKeyPrefix(ctx, "wa_", 2); keysOf(got) != "wa_ABC,wa_ab" {
		t.Errorf("limited = %s", keysOf(got))
	}
}

func testRequestsByEffectString(t *testing.T, b *Backend) {
	ctx := context.Background()
	long := strings.Repeat("é", 201)
	atLimit := strings.Repeat("é", 200) // 400 bytes, 200 characters
	older := time.Now().Add(-time.Minute)
	first := newRequest("wa_effect_1", "sha256:b")
	first.Now = &older
	first.Snapshot = []byte(`{"invoice":"inv_8841","amount_cents":4200,"lines":[{"sku":"sku_1","note":"` + long + `"}],"memo":"` + atLimit + `"}`)
	second := newRequest("wa_effect_2", "sha256:b")
	second.Snapshot = []byte(`{"customer":{"invoice":"inv_8841"},"tags":["a","inv_9"],"ok":true,"n":null}`)
	insert(t, b, first)
	insert(t, b, second)
	for value, want := range map[string]string{
		"inv_8841": "wa_effect_2,wa_effect_1", // newest first, at any depth
		"sku_1":    "wa_effect_1",             // inside an array of objects
		"inv_9":    "wa_effect_2",             // an array element
		atLimit:    "wa_effect_1",
		long:       "", // too long to be an id
		"invoice":  "", // keys are not values
		"4200":     "", // numbers are not strings
		"true":     "",
		"inv":      "",
		"":         "",
	} {
		got, err := b.RequestsByEffectString(ctx, value, 10)
		if err != nil || keysOf(got) != want {
			t.Errorf("RequestsByEffectString(%.20s) = %s, %v; want %s", value, keysOf(got), err, want)
		}
	}
	if got, _ := b.RequestsByEffectString(ctx, "inv_8841", 1); keysOf(got) != "wa_effect_2" {
		t.Errorf("limited = %s", keysOf(got))
	}
}

func testPendingAndUnresolvedLookups(t *testing.T, b *Backend) {
	ctx := context.Background()
	short := newRequest("wa_pending_short", "sha256:b")
	short.TTL = time.Minute
	insert(t, b, short)
	insertRequest(t, b, "wa_pending_long")
	review, _ := approved(t, b, "wa_review")
	toNeedsReview(t, b)
	unknown, _ := approved(t, b, "wa_unknown_lookup")
	c := claimOne(t, b, "w")
	at := *c.ClaimExpiresAt
	if n, err := b.ExpireClaims(ctx, &at, 10); err != nil || n != 1 {
		t.Fatalf("ExpireClaims = %d, %v", n, err)
	}
	if got, err := b.PendingRequests(ctx, 10); err != nil || keysOf(got) != "wa_pending_short,wa_pending_long" {
		t.Errorf("PendingRequests = %s, %v", keysOf(got), err)
	}
	got, err := b.UnresolvedExecutions(ctx, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("UnresolvedExecutions = %d, %v", len(got), err)
	}
	// Oldest change first: the review moved before the claim expired.
	if got[0].Request.ID != review.ID || got[0].Execution.State != store.ExecNeedsReview ||
		got[1].Request.ID != unknown.ID || got[1].Execution.State != store.ExecUnknown {
		t.Errorf("unresolved = %s %s, %s %s", got[0].Request.Key, got[0].Execution.State, got[1].Request.Key, got[1].Execution.State)
	}
	if limited, err := b.UnresolvedExecutions(ctx, 1); err != nil || len(limited) != 1 {
		t.Errorf("limited = %d, %v", len(limited), err)
	}
}

func testRecentlyDecidedListsRequestsThatLeftPending(t *testing.T, b *Backend) {
	ctx := context.Background()
	insertRequest(t, b, "wa_still_pending")
	base := time.Now().UTC().Truncate(time.Second)
	at := func(d time.Duration) *time.Time { t := base.Add(d); return &t }
	p := decide(insertRequest(t, b, "wa_approved_first"), store.VerdictApprove, "U1")
	p.Now = at(time.Second)
	if _, _, ok, err := b.Decide(ctx, p); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	p = decide(insertRequest(t, b, "wa_rejected_second"), store.VerdictReject, "U1")
	p.Now = at(2 * time.Second)
	if _, _, ok, err := b.Decide(ctx, p); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if _, ok, err := b.CancelRequest(ctx, insertRequest(t, b, "wa_cancelled_third").ID, "agent:a", at(3*time.Second)); err != nil || !ok {
		t.Fatalf("CancelRequest = %v, %v", ok, err)
	}
	got, err := b.RecentlyDecided(ctx, 10)
	if err != nil || keysOf(got) != "wa_cancelled_third,wa_rejected_second,wa_approved_first" {
		t.Errorf("RecentlyDecided = %s, %v", keysOf(got), err)
	}
	if got, err := b.RecentlyDecided(ctx, 1); err != nil || keysOf(got) != "wa_cancelled_third" {
		t.Errorf("limited = %s, %v", keysOf(got), err)
	}
}

package bot_test

import (
	"github.com/countersign/countersign/store/drivertest"
	"strings"
	"testing"
)

func TestSlashCommandLookups(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{invoice: "inv_8841"})
	other := b.submit(intent{n: 1, invoice: "inv_9000"})
	twinA := b.submit(intent{n: 2, key: "wa_feedbeef01", invoice: "inv_shared"})
	twinB := b.submit(intent{n: 3, key: "wa_feedbeef02", invoice: "inv_shared"})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	b.execute(req, `state = 'succeeded', attempts = 2, last_code = 'ok', provider_ref = 'cr_77', response_status = 201`, "")
	b.deliver()

	// Full key, prefix, short form and hex without wa_ all find it, in full.
	for _, text := range []string{req.Key, req.Key[:11], " `" + req.Key[:15] + "` ", req.Key[:12] + "…" + req.Key[len(req.Key)-4:], req.Key[3:14], req.ID} {
		got := b.command("USUP", text)
		for _, want := range []string{req.Key, "Status *approved, succeeded*", "Decision: *approve* by <@UANA>", "*succeeded* · 2 attempts of 5", "code `ok`", "`cr_77`", "HTTP 201", "Open the card", "https://slack.com/archives/" + billingChan + "/p", "Timeline:", "decided by <@UANA>"} {
			if !strings.Contains(got, want) {
				t.Errorf("/countersign %s lacks %q:\n%s", text, want, got)
			}
		}
	}
	// A business id finds the request whose effect holds it.
	if got := b.command("USUP", "inv_9000"); !strings.Contains(got, other.Key) || strings.Contains(got, req.Key) {
		t.Errorf("/countersign inv_9000:\n%s", got)
	}
	// A client-sent key is found as is.
	if got := b.command("USUP", "wa_feedbeef01"); !strings.Contains(got, twinA.Key) || !strings.Contains(got, "Status *pending*") {
		t.Errorf("/countersign wa_feedbeef01:\n%s", got)
	}
	// An ambiguous prefix and a shared business id list the matches.
	for _, text := range []string{"wa_feedbeef", "inv_shared"} {
		got := b.command("USUP", text)
		if !strings.Contains(got, "2 requests") || !strings.Contains(got, twinA.Key) || !strings.Contains(got, twinB.Key) {
			t.Errorf("/countersign %s:\n%s", text, got)
		}
	}
	if got := b.command("USUP", "pending"); !strings.Contains(got, other.Key) || strings.Contains(got, req.Key) {
		t.Errorf("/countersign pending:\n%s", got)
	}
	if got := b.command("USUP", "unknown"); !strings.Contains(got, "No write is unknown") {
		t.Errorf("/countersign unknown:\n%s", got)
	}
	b.click("UANA", billingChan, "approve", decisionValue(other))
	b.execute(other, `state = 'unknown', attempts = 1, last_code = 'gateway_timeout'`, "")
	if got := b.command("USUP", "unknown"); !strings.Contains(got, other.Key) || !strings.Contains(got, "gateway_timeout") {
		t.Errorf("/countersign unknown:\n%s", got)
	}

	// Help, and help for anything it does not understand.
	for _, text := range []string{"", "help", "wa_123", "two words", "nothing_matches_this", strings.Repeat("z", 300)} {
		if got := b.command("USUP", text); !strings.Contains(got, "/countersign pending") {
			t.Errorf("/countersign %q did not answer help:\n%s", text, got)
		}
	}
}

// Lookups answer many matches with at most five.
func TestAmbiguousPrefixListsFive(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		for i := range 8 {
			b.submit(intent{n: i, key: "wa_cafecafe" + string(rune('a'+i))})
		}
		got := b.command("USUP", "wa_cafecafe")
		if !strings.Contains(got, "More than 5") || strings.Count(got, "• `wa_cafecafe") != 5 {
			t.Fatalf("answer:\n%s", got)
		}
	})
}

func TestLookupShowsTheExpiryDate(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{})
		if got, want := b.command("USUP", req.Key), "expires "+req.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"); !strings.Contains(got, want) {
			t.Fatalf("answer lacks %q:\n%s", want, got)
		}
	})
}

package approvals

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// A grant covers an effect whose matched fields equal the granted values
// (numbers by value and exactly, objects and arrays member by member, a
// missing field never) and whose amount is at most the ceiling, exactly.
func TestGrantCoversExactly(t *testing.T) {
	t.Parallel()
	ceiling := "4200.50"
	g := Grant{Match: map[string]json.RawMessage{
		"customer": json.RawMessage(`"cus_1"`),
		"account":  json.RawMessage(`9007199254740993`),
		"meta":     json.RawMessage(`{"region":"eu","tags":["a","b"]}`),
	}, AmountField: "amount.value", AmountCeiling: &ceiling}
	const base = `"customer":"cus_1","account":9007199254740993,"meta":{"tags":["a","b"],"region":"eu"}`
	for _, tc := range []struct {
		name, effect string
		want         bool
	}{
		{"equal, amount at the ceiling", `{` + base + `,"amount":{"value":4200.50}}`, true},
		{"amount below, written differently", `{` + base + `,"amount":{"value":42.005e2}}`, true},
		{"amount just above", `{` + base + `,"amount":{"value":4200.5000001}}`, false},
		{"amount not a number", `{` + base + `,"amount":{"value":"4200"}}`, false},
		{"amount missing", `{` + base + `}`, false},
		{"another customer", `{"customer":"cus_2","account":9007199254740993,"meta":{"tags":["a","b"],"region":"eu"},"amount":{"value":1}}`, false},
		{"an account past 2^53 one off", `{"customer":"cus_1","account":9007199254740992,"meta":{"tags":["a","b"],"region":"eu"},"amount":{"value":1}}`, false},
		{"the account as a decimal", `{"customer":"cus_1","account":9007199254740993.0,"meta":{"tags":["a","b"],"region":"eu"},"amount":{"value":1}}`, true},
		{"tags in another order", `{"customer":"cus_1","account":9007199254740993,"meta":{"tags":["b","a"],"region":"eu"},"amount":{"value":1}}`, false},
		{"a member more", `{"customer":"cus_1","account":9007199254740993,"meta":{"tags":["a","b"],"region":"eu","x":1},"amount":{"value":1}}`, false},
		{"customer missing", `{"account":9007199254740993,"meta":{"tags":["a","b"],"region":"eu"},"amount":{"value":1}}`, false},
	} {
		effect, err := decodeJSON([]byte(tc.effect))
		if err != nil {
			t.Fatal(err)
		}
		if got := covers(g, effect); got != tc.want {
			t.Errorf("%s: covers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The grant an approval asks for takes the approved effect's values, and
// is refused where it cannot apply.
func TestGrantAskedTakesTheApprovedValues(t *testing.T) {
	t.Parallel()
	tool := Tool{Name: "billing.credit", Grants: &GrantRule{MaxTTL: 8 * time.Hour, Match: []string{"customer.id"}, Amount: "amount_cents"}}
	req := store.Request{Key: "wa_x", Tool: "billing.credit", Snapshot: []byte(`{"customer":{"id":"cus_1"},"amount_cents":4200.0}`),
		Policy: store.Policy{Approvals: 1}}
	approve := Decision{Verdict: store.VerdictApprove, Grant: time.Hour}
	g, err := grantAsked(tool, req, approve)
	if err != nil || string(g.Match["customer.id"]) != `"cus_1"` || g.AmountField != "amount_cents" ||
		g.AmountCeiling == nil || *g.AmountCeiling != "4200.0" || g.TTL != time.Hour {
		t.Fatalf("grantAsked = %+v, %v", g, err)
	}
	pair := req
	pair.Policy.Approvals = 2
	noAmount := req
	noAmount.Snapshot = []byte(`{"customer":{"id":"cus_1"}}`)
	noCustomer := req
	noCustomer.Snapshot = []byte(`{"amount_cents":1}`)
	for _, tc := range []struct {
		name string
		tool Tool
		req  store.Request
		d    Decision
		want string
	}{
		{"a tool without grants", Tool{Name: "billing.credit"}, req, approve, "does not allow standing grants"},
		{"longer than max_ttl", tool, req, Decision{Verdict: store.VerdictApprove, Grant: 9 * time.Hour}, "at most 8h"},
		{"a reject", tool, req, Decision{Verdict: store.VerdictReject, Grant: time.Hour}, "only an approval"},
		{"two approvals", tool, pair, approve, "needs 2 approvals"},
		{"no amount", tool, noAmount, approve, "no number at amount_cents"},
		{"no matched field", tool, noCustomer, approve, "no customer.id"},
	} {
		_, err := grantAsked(tc.tool, tc.req, tc.d)
		var input *InputError
		if !errors.As(err, &input) || input.Field != "/grant" || !strings.Contains(input.Message, tc.want) {
			t.Errorf("%s: %v, want an invalid grant saying %q", tc.name, err, tc.want)
		}
	}
}

func TestDurationText(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{8 * time.Hour: "8h", 90 * time.Minute: "1h30m", 45 * time.Minute: "45m", 30 * time.Second: "30s"} {
		if got := DurationText(d); got != want {
			t.Errorf("DurationText(%s) = %q, want %q", d, got, want)
		}
	}
}

package hook

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store/drivertest"
)

// The hook refuses a requested_for that is not a user id with 422
// invalid_request naming the field, and stores nothing (the rule itself is
// approvals' TestRequestedForMustBeAUserID).
func TestHookRefusesARequestedForThatIsNotAUserID(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		b := setupWith(t, d)
		for i, id := range []string{strings.ToLower(requester), "<@" + requester + ">", "local:", "ops@example.com"} {
			body := fmt.Sprintf(`{"run_id":"r-for-%d","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1"},"requested_for":%q}`, i, id)
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(body), nil)
			if r.status != http.StatusUnprocessableEntity {
				t.Errorf("requested_for %q: hook answered %d %s, want 422", id, r.status, r.body)
				continue
			}
			if code, field := r.errorCode(t); code != approvals.CodeInvalidRequest || field != "/requested_for" {
				t.Errorf("requested_for %q: hook answered %s (field %q), want invalid_request (requested_for)", id, code, field)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM requests`); n != 0 {
			t.Fatalf("%d refused requests were stored", n)
		}
		body := `{"run_id":"r-for-ok","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1"},"requested_for":"` + requester + `"}`
		if r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(body), nil); r.status != http.StatusCreated {
			t.Fatalf("requested_for %s: hook answered %d %s, want 201", requester, r.status, r.body)
		}
		// With its scheme, a Slack id is answered bare, as the audit has it.
		body = `{"run_id":"r-for-scheme","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1"},"requested_for":"slack:` + requester + `"}`
		r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(body), nil)
		if r.status != http.StatusCreated || !strings.Contains(string(r.body), `"requested_for":"`+requester+`"`) {
			t.Fatalf("requested_for slack:%s: hook answered %d %s, want 201 with it bare", requester, r.status, r.body)
		}
	})
}

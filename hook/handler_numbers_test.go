package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/store/drivertest"
)

// inexactNumbers are numbers RFC 8785 would write as another value (or
// not at all), as a tester sent them: each was once stored changed.
var inexactNumbers = []string{
	"9007199254740993.0",
	"12345678901234567891e0",
	"1e-400",
	"2.4e-324",
	"0." + strings.Repeat("1", 5000),
	"9007199254740993",
	"1e400",
}

// exactNumbers keep their value in RFC 8785 form, written as they are or
// not (1.0 is stored as 1, -0 as 0).
var exactNumbers = []string{"0", "-0", "-0.0", "1", "1.0", "1e2", "0.5", "0.1", "1.5", "1e21", "1e-7", "0.30000000000000004", "5e-324", "9007199254740992"}

// numberIntent is an intent whose second line's amount is the number n.
func numberIntent(run, n string) string {
	return fmt.Sprintf(`{"run_id":%q,"step":1,"tool":"billing.credit","effect":{"invoice":"inv_1","lines":[{"amount":1},{"amount":%s}]}}`, run, n)
}

// An inexact number anywhere in an intent is 422 invalid_request naming its
// JSON Pointer, and nothing is stored; an exact one is 201 under the key
// the agent computes offline, and the stored effect holds its value.
func TestHookRefusesInexactNumbers(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, d)
		refused := []struct{ body, field string }{
			{`{"run_id":"r","step":9007199254740993,"tool":"billing.credit","effect":{}}`, "/step"},
			{`{"run_id":"r","step":1,"tool":"billing.credit","effect":{"a/b":{"c~d":1e-400}}}`, "/effect/a~1b/c~0d"},
		}
		for i, n := range inexactNumbers {
			refused = append(refused, struct{ body, field string }{numberIntent(fmt.Sprintf("r-inexact-%d", i), n), "/effect/lines/1/amount"})
		}
		for _, tt := range refused {
			r := b.post(t, tt.body)
			code, field := r.errorCode(t)
			if r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || field != tt.field {
				t.Errorf("%.80s: %d %s field %q, want 422 %s field %q", tt.body, r.status, code, field, approvals.CodeInvalidRequest, tt.field)
			}
		}
		b.expectCounts(t, map[string]int{
			`SELECT count(*) FROM requests`: 0,
			`SELECT count(*) FROM events`:   0,
			`SELECT count(*) FROM outbox`:   0,
		})

		for i, n := range exactNumbers {
			run := fmt.Sprintf("r-exact-%d", i)
			body := numberIntent(run, n)
			r := b.post(t, body)
			if r.status != http.StatusCreated {
				t.Errorf("%s: %d %s, want 201", n, r.status, r.body)
				continue
			}
			v := r.view(t)
			var sent struct{ Effect json.RawMessage }
			if err := json.Unmarshal([]byte(body), &sent); err != nil {
				t.Fatal(err)
			}
			offline, err := client.Key(client.Intent{RunID: run, Step: 1, Tool: "billing.credit", Effect: sent.Effect})
			if err != nil || v.Key != offline {
				t.Errorf("%s: stored under %s, offline key %s (%v)", n, v.Key, offline, err)
			}
			if stored := secondAmount(t, v.Effect); !sameRational(t, stored, n) {
				t.Errorf("%s: stored as %s, another value", n, stored)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM requests`); n != len(exactNumbers) {
			t.Errorf("%d requests stored, want %d", n, len(exactNumbers))
		}
	})
}

// secondAmount returns effect.lines[1].amount as written in effect.
func secondAmount(t *testing.T, effect []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(effect))
	dec.UseNumber()
	var e struct {
		Lines []struct{ Amount json.Number }
	}
	if err := dec.Decode(&e); err != nil || len(e.Lines) != 2 {
		t.Fatalf("stored effect %s: %v", effect, err)
	}
	return e.Lines[1].Amount.String()
}

// sameRational reports whether two number literals have one exact value.
func sameRational(t *testing.T, a, b string) bool {
	t.Helper()
	x, okA := new(big.Rat).SetString(a)
	y, okB := new(big.Rat).SetString(b)
	if !okA || !okB {
		t.Fatalf("cannot read %s or %s", a, b)
	}
	return x.Cmp(y) == 0
}

package httpsender

import (
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/sender"
)

// FuzzClassify checks that any provider answer classifies without panicking
// into one of the five outcomes, and that a 2xx with no recognised code is a
// success.
func FuzzClassify(f *testing.F) {
	f.Add(201, []byte(`{"id":"obj_1"}`), "")
	f.Add(429, []byte(`{"error":{"code":"rate_limited","message":"slow down"}}`), "120")
	f.Add(200, []byte(`{"code":"card_declined"}`), "")
	f.Add(504, []byte(`not json`), "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(402, []byte(`{"error":"card_declined","code":7}`), "-1")
	f.Fuzz(func(t *testing.T, status int, body []byte, retry string) {
		h := http.Header{}
		h.Set("Retry-After", retry)
		c := Classify(Answer{Status: status, Body: body, Header: h}, time.Unix(1_760_000_000, 0))
		switch c.Outcome {
		case sender.OutcomeSucceeded, sender.OutcomeRetry, sender.OutcomeVerify, sender.OutcomeFatal, sender.OutcomeReview:
		default:
			t.Fatalf("outcome %q", c.Outcome)
		}
		if c.RetryAfter < 0 || c.RetryAfter > maxRetryAfter {
			t.Fatalf("Retry-After %s out of bounds", c.RetryAfter)
		}
		if _, known := codeOutcomes[parseBody(body).code]; status >= 200 && status <= 299 && !known && c.Outcome != sender.OutcomeSucceeded {
			t.Fatalf("2xx without a known code classified %s", c.Outcome)
		}
	})
}

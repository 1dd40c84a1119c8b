package emailsurface

import (
	"time"

	"github.com/countersign/countersign/store"
)

// LinkFor is the token of a link for address, as a message would carry
// it, for the tests that craft links no message carried.
func LinkFor(e *Email, requestID string, round int, payloadHash string, verdict store.Verdict, address string, exp time.Time) string {
	return e.linkURL(e.keys.issue(link{RequestID: requestID, Round: round, PayloadHash: payloadHash, Verdict: verdict, Expires: exp}, address))
}

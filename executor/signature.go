package executor

import (
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// SignatureHeader carries the gate's signature of a dispatched body.
const SignatureHeader = signature.Header

// Sign returns the Countersign-Signature value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>" (docs/ARCHITECTURE.md).
func Sign(secret []byte, t time.Time, body []byte) string { return signature.Sign(secret, t, body) }

// ErrBadSignature is returned by VerifySignature for any signature that does
// not prove the body came through the gate within the tolerance.
var ErrBadSignature = signature.ErrBad

// VerifySignature checks a Countersign-Signature header value, as a provider
// would: the HMAC must match in constant time and t must be within tolerance
// of now.
func VerifySignature(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	return signature.Verify(secret, header, body, now, tolerance)
}

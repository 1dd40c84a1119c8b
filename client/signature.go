package client

import (
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// Headers countersign sets on what it sends: a dispatch to a provider, a
// callback to an agent.
const (
	// SignatureHeader is "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>".
	SignatureHeader = signature.Header
	// EventHeader names a callback's event: request.settled or
	// request.needs_review.
	EventHeader = "Countersign-Event"
	// DeliveryHeader identifies a callback delivery; a redelivery repeats it.
	DeliveryHeader = "Countersign-Delivery"
)

// DefaultTolerance is how far a signature's time may be from now.
const DefaultTolerance = 5 * time.Minute

// ErrBadSignature is what VerifySignature returns for a signature that does
// not prove the body came from countersign within the tolerance.
var ErrBadSignature = signature.ErrBad

// VerifySignature checks the Countersign-Signature header of a dispatch
// (secret: COUNTERSIGN_DISPATCH_SECRET) or a callback (secret: the agent's
// callback secret) against the raw body as received: the HMAC must match,
// compared in constant time, and its time must be within tolerance of now
// (0 means DefaultTolerance), so a captured request cannot be replayed later.
// Several v1 values may be present while a secret is rotated; one must match.
func VerifySignature(secret []byte, header string, body []byte, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	return signature.Verify(secret, header, body, time.Now(), tolerance)
}

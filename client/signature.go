package client

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// Headers countersign sets on what it sends: a dispatch to a provider, a
// callback to an agent.
const (
	// SignatureHeader is "t=<unix>,v1=<hex>,v2=<hex>" (docs/CALLBACKS.md).
	SignatureHeader = signature.Header
	// EventHeader names a callback's event: request.settled,
	// request.needs_review, request.approved or request.edited.
	EventHeader = "Countersign-Event"
	// DeliveryHeader identifies a callback delivery; a redelivery repeats it.
	DeliveryHeader = signature.DeliveryHeader
)

// DefaultTolerance is how far a signature's time may be from now.
const DefaultTolerance = 5 * time.Minute

// ErrBadSignature is what the verifiers return for a signature that does
// not prove what it covers came from countersign within the tolerance.
var ErrBadSignature = signature.ErrBad

// SignedRequest is what a v2 signature covers besides its time and the
// body: the method, the path of the request line (percent-encoding
// untouched, without the query), and the Idempotency-Key of a dispatch or
// the Countersign-Delivery of a callback (empty when the request has none).
type SignedRequest = signature.Request

// VerifyRequest checks the Countersign-Signature of r, a dispatch (secret:
// the tool's dispatch secret) or a callback (secret: the agent's callback
// secret) as an http.Handler received it, against the raw body: a v2 must
// match r's method, the path of its request line (whatever a mux or
// http.StripPrefix did to r.URL since), its Idempotency-Key or
// Countersign-Delivery, and the body, compared in constant time, and its
// time must be within tolerance of now (0 means DefaultTolerance). So a
// captured request cannot be sent again later, nor within the tolerance
// under another key, to another path or with another method. Several v2
// values may be present while a secret is rotated; one must match. A
// receiver that accepts several secrets calls it once for each.
func VerifyRequest(secret []byte, r *http.Request, body []byte, tolerance time.Duration) error {
	return verifyV2At(secret, r.Header.Get(SignatureHeader), signature.RequestOf(r), body, time.Now(), tolerance)
}

// VerifySignatureV2 is VerifyRequest for a receiver that has the header and
// the request's parts rather than an *http.Request, for instance behind a
// proxy that rewrote the path: req must say how countersign sent it.
func VerifySignatureV2(secret []byte, header string, req SignedRequest, body []byte, tolerance time.Duration) error {
	return verifyV2At(secret, header, req, body, time.Now(), tolerance)
}

// VerifySignature checks only the v1 of the Countersign-Signature header: the
// HMAC of the time and the body must match, compared in constant time, and
// its time must be within tolerance of now (0 means DefaultTolerance).
// Several v1 values may be present while a secret is rotated; one must
// match. v1 does not cover the method, the path or the Idempotency-Key, so
// it accepts the same body sent again within the tolerance under another
// key or to another path: prefer VerifyRequest, and keep this for a receiver
// that cannot know how the request was sent (docs/CALLBACKS.md, "Receiver
// policy").
func VerifySignature(secret []byte, header string, body []byte, tolerance time.Duration) error {
	return verifyV1At(secret, header, body, time.Now(), tolerance)
}

func verifyV2At(secret []byte, header string, req SignedRequest, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	return signature.VerifyRequest(secret, header, req, body, now, tolerance)
}

func verifyV1At(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	return signature.Verify(secret, header, body, now, tolerance)
}

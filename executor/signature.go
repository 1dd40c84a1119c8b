package executor

import (
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// SignatureHeader carries the gate's signature of a dispatched body.
const SignatureHeader = signature.Header

// Sign returns the Countersign-Signature value for body sent at t (the
// scheme is package signature's; providers verify with client.VerifySignature).
func Sign(secret []byte, t time.Time, body []byte) string { return signature.Sign(secret, t, body) }

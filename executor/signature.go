package executor

import (
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// SignatureHeader carries the gate's signature of a dispatched body.
const SignatureHeader = signature.Header

// Sign returns the Countersign-Signature value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>" (docs/ARCHITECTURE.md).
// Providers check it with client.VerifySignature.
func Sign(secret []byte, t time.Time, body []byte) string { return signature.Sign(secret, t, body) }

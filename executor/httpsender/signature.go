package httpsender

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// SignatureHeader carries the gate's signature of a dispatch.
const SignatureHeader = signature.Header

// Sign returns the Countersign-Signature value of req, a dispatch of body
// sent at t, once its other headers are set: per secret, v1 over the time
// and the body, and v2 also over the method, the path and the
// Idempotency-Key (docs/CALLBACKS.md). Providers check it with
// client.VerifyRequest, which accepts a match with any one secret.
func Sign(secrets [][]byte, t time.Time, req *http.Request, body []byte) string {
	return signature.Sign(secrets, t, signature.RequestOf(req), body)
}

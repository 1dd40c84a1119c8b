package executor

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/internal/signature"
)

// SignatureHeader carries the gate's signature of a dispatch.
const SignatureHeader = signature.Header

// Sign returns the Countersign-Signature value of req, a dispatch of body
// sent at t, once its other headers are set: v1 over the time and the body,
// v2 also over the method, the path and the Idempotency-Key
// (docs/CALLBACKS.md). Providers check it with client.VerifyRequest.
func Sign(secret []byte, t time.Time, req *http.Request, body []byte) string {
	return signature.Sign([][]byte{secret}, t, signature.RequestOf(req), body)
}

package executor

import (
	"net/http"
	"time"

	"github.com/countersign/countersign/executor/httpsender"
)

// Endpoint is a URL the HTTP sender reads, a verify URL or a precondition,
// for a Tool configured with a Method and a URL rather than a Sender of its
// own (see executor/httpsender).
type Endpoint = httpsender.Endpoint

// SignatureHeader carries the gate's signature of a dispatch.
const SignatureHeader = httpsender.SignatureHeader

// ErrKeyPlacement: a URL template has {key} where a key may not go.
var ErrKeyPlacement = httpsender.ErrKeyPlacement

// ParseURLTemplate parses an http or https URL template.
func ParseURLTemplate(s string) (*httpsender.URLTemplate, error) {
	return httpsender.ParseURLTemplate(s)
}

// Sign returns the Countersign-Signature value of a dispatch (httpsender.Sign).
func Sign(secrets [][]byte, t time.Time, req *http.Request, body []byte) string {
	return httpsender.Sign(secrets, t, req, body)
}

// httpTool fills in t's sender, verifier and checker from its HTTP
// settings where it has none of its own.
func (e *Executor) httpTool(t Tool) Tool {
	if t.Sender == nil {
		t.Sender = &httpsender.Sender{Method: t.Method, URL: t.URL, Headers: t.Headers, Secrets: e.secretsFor(t), Client: e.client}
	}
	if t.Verifier == nil && t.Verify != nil {
		t.Verify = t.Verify.Bind(e.client)
		t.Verifier = t.Verify
	}
	if t.Checker == nil && t.Precondition != nil {
		t.Precondition = t.Precondition.Bind(e.client)
		t.Checker = t.Precondition
	}
	return t
}

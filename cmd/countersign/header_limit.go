package main

import (
	"net/http"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/internal/requestid"
)

// maxHeaderBytes is the most a request's line and headers may take. The
// server reads up to readHeaderBytes, so that a request over this limit
// but under that one reaches refuseLargeHeaders and gets the API's
// envelope and a Request-Id; only one over readHeaderBytes gets net/http's
// plain 431.
const (
	maxHeaderBytes  = 64 << 10
	readHeaderBytes = 1 << 20
)

// refuseLargeHeaders answers a request whose line and headers take more
// than maxHeaderBytes, on every route, with 431 and the API's envelope
// (too_large: what was sent is more than countersign takes; the status
// says it is the headers).
func refuseLargeHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) <= maxHeaderBytes {
			next.ServeHTTP(w, r)
			return
		}
		requestid.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			hook.Refuse(w, r, http.StatusRequestHeaderFieldsTooLarge, approvals.Refusal{Code: approvals.CodeTooLarge,
				Message: "The request's headers are larger than 64 KiB."})
		})).ServeHTTP(w, r)
	})
}

// headerBytes counts the request's line and header lines as they came.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	n += len("Host: ") + len(r.Host) + 2
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + 2 + len(v) + 2
		}
	}
	return n
}

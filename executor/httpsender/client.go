package httpsender

import (
	"net/http"
	"time"
)

// defaultClient reads an Endpoint built without a client.
var defaultClient = NewClient(time.Minute, 100)

// NewClient returns the client sends and reads go through: it never
// follows a redirect, keeps up to conns idle connections, and gives up on
// a call after timeout (a backstop: each call also has its tool's
// deadline).
func NewClient(timeout time.Duration, conns int) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConns = max(conns, 100)
	transport.MaxIdleConnsPerHost = max(conns, 2)
	transport.ResponseHeaderTimeout = timeout
	// Close idle connections before common server keep-alive timeouts (5s in
	// several stacks) do: a request written onto a connection the server is
	// closing is ambiguous, and becomes an unknown to verify.
	transport.IdleConnTimeout = 4 * time.Second
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			// A redirect is an answer we were not taught; never follow one
			// with an approved body.
			return http.ErrUseLastResponse
		},
	}
}

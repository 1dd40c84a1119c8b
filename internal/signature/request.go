package signature

import (
	"net/http"
	"net/url"
	"strings"
)

// Headers v2 covers, besides the signature's own.
const (
	IdempotencyKeyHeader = "Idempotency-Key"
	DeliveryHeader       = "Countersign-Delivery"
)

// Request is what v2 covers besides the time and the body: how the request
// was sent. A field the request does not carry is empty: a dispatch has no
// delivery id, a callback no Idempotency-Key.
type Request struct {
	// Method is the request line's method, as sent ("POST").
	Method string
	// Path is the request-target's path as sent: percent-encoding
	// untouched, without the query, "/" when empty (PathOf).
	Path string
	// IdempotencyKey is the Idempotency-Key header of a dispatch.
	IdempotencyKey string
	// Delivery is the Countersign-Delivery header of a callback.
	Delivery string
}

// RequestOf returns what v2 covers of r, sent (a client's request, once its
// headers are set) or received (a server's).
func RequestOf(r *http.Request) Request {
	return Request{
		Method:         r.Method,
		Path:           PathOf(r),
		IdempotencyKey: r.Header.Get(IdempotencyKeyHeader),
		Delivery:       r.Header.Get(DeliveryHeader),
	}
}

// PathOf returns the path of r's request line: the request-target up to its
// query, percent-encoding untouched, "/" when empty. A received request
// keeps its request-target in RequestURI, whatever a mux or
// http.StripPrefix later does to r.URL; a request to send has none yet, and
// its URL gives the target the transport will write.
func PathOf(r *http.Request) string {
	target := r.RequestURI
	switch {
	case target == "":
		target = r.URL.RequestURI()
	case !strings.HasPrefix(target, "/"):
		// The absolute form a proxy is sent ("http://host/path?q").
		if u, err := url.ParseRequestURI(target); err == nil {
			target = u.RequestURI()
		}
	}
	path, _, _ := strings.Cut(target, "?")
	if path == "" {
		return "/"
	}
	return path
}

// valid reports whether the string v2 signs can be split only one way: no
// field before the body holds a newline.
func (r Request) valid() bool {
	return !strings.ContainsRune(r.Method+r.Path+r.IdempotencyKey+r.Delivery, '\n')
}

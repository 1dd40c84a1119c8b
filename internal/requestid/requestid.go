// Package requestid names each request the agent API answers: the id goes
// out in the Request-Id header and in every error body, and every log line
// written with the request's context carries it, so a support engineer can
// go from what a client saw to what the server wrote.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
)

// Header is the response header that carries the id.
const Header = "Request-Id"

// New returns a fresh id: "req_" and 24 hex digits (96 random bits).
func New() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "req_" + hex.EncodeToString(b[:])
}

type contextKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// From returns the id ctx carries, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(contextKey{}).(string)
	return id
}

// Middleware names every request next serves: a fresh id in the
// Request-Id header and in the request's context, for its error bodies and
// log lines. A request already named keeps its id.
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if From(r.Context()) == "" {
			id := New()
			w.Header().Set(Header, id)
			r = r.WithContext(With(r.Context(), id))
		}
		next.ServeHTTP(w, r)
	})
}

// Handler wraps h so that a record logged with a context carrying an id
// gets it as the attribute http_request_id (request_id, in
// countersign's lines, is the id of a request for a write).
func Handler(h slog.Handler) slog.Handler { return handler{h} }

type handler struct{ slog.Handler }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := From(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("http_request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(attrs)}
}

func (h handler) WithGroup(name string) slog.Handler { return handler{h.Handler.WithGroup(name)} }

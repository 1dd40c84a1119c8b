package requestid

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

// Middleware names a request once: the header and the context agree, and
// a request already named keeps its id.
func TestMiddlewareNamesEachRequestOnce(t *testing.T) {
	var seen string
	h := Middleware(Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = From(r.Context()) })))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := rec.Header().Values(Header); len(got) != 1 || got[0] != seen || !regexp.MustCompile(`^req_[0-9a-f]{24}$`).MatchString(seen) {
		t.Errorf("Request-Id %v, context %q", got, seen)
	}
}

func TestNewIsFreshAndWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := New()
		if !regexp.MustCompile(`^req_[0-9a-f]{24}$`).MatchString(id) {
			t.Fatalf("id %q is not req_ and 24 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q given twice", id)
		}
		seen[id] = true
	}
}

func TestHandlerAddsTheIdOfTheContext(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(Handler(slog.NewJSONHandler(&buf, nil))).With("component", "hook")
	logger.InfoContext(With(context.Background(), "req_abc"), "with")
	logger.InfoContext(context.Background(), "without")
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 2 {
		t.Fatalf("lines = %d, want 2", len(lines))
	}
	var with, without map[string]any
	if err := json.Unmarshal(lines[0], &with); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[1], &without); err != nil {
		t.Fatal(err)
	}
	if with["http_request_id"] != "req_abc" || with["component"] != "hook" {
		t.Errorf("line with a request = %v, want request_id req_abc and the logger's attributes", with)
	}
	if _, ok := without["http_request_id"]; ok {
		t.Errorf("line without a request names one: %v", without)
	}
}

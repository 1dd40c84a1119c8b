package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestSmoke drives an in-memory hook (201 for a body it has not seen, 200
// after) for one short round.
func TestSmoke(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		old := seen[string(body)]
		seen[string(body)] = true
		mu.Unlock()
		if old {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer hook.Close()

	var out bytes.Buffer
	err := run(context.Background(), []string{"-target", "fake=" + hook.URL, "-clients", "2", "-rounds", "1", "-duration", "100ms"}, &out)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "| 2 | fake |") {
		t.Errorf("output lacks the row for fake at 2 clients:\n%s", out.String())
	}
}

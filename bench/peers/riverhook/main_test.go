package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/countersign/countersign/bench/peers/internal/pgtest"
)

// TestHook checks the peer behaves as the comparison assumes: 401 without the
// token, 201 for a new intent, 200 with Idempotent-Replayed for its repeat.
func TestHook(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h, err := newHandler(ctx, pool, "tok")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"run_id":"r1","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1","amount_cents":4200,"currency":"USD"}}`
	for _, c := range []struct {
		token, body string
		status      int
		replayed    string
	}{
		{"wrong", body, http.StatusUnauthorized, ""},
		{"tok", `{"run_id":"r1","surprise":1}`, http.StatusUnprocessableEntity, ""},
		{"tok", body, http.StatusCreated, ""},
		{"tok", body, http.StatusOK, "true"},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/requests", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || resp.Header.Get("Idempotent-Replayed") != c.replayed {
			t.Errorf("token %s, body %s: %d %q %s, want %d %q", c.token, c.body, resp.StatusCode,
				resp.Header.Get("Idempotent-Replayed"), got, c.status, c.replayed)
		}
	}
}

package client_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/executor"
)

// dispatchTo builds a dispatch of body to url under key, signed by the
// executor at t.
func dispatchTo(t *testing.T, secret []byte, at time.Time, method, url, key string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set(client.SignatureHeader, executor.Sign([][]byte{secret}, at, req, body))
	return req
}

// VerifySignature accepts what the executor signs, and nothing else: not
// another body, another secret, or a signature older than the tolerance.
func TestVerifySignature(t *testing.T) {
	t.Parallel()
	secret, body := []byte("s3cret"), []byte(`{"amount_cents":4200}`)
	sign := func(at time.Time) string {
		return dispatchTo(t, secret, at, http.MethodPost, "http://provider.internal/credits", "wa_k", body).Header.Get(client.SignatureHeader)
	}
	now, old := sign(time.Now()), sign(time.Now().Add(-10*time.Minute))
	if err := client.VerifySignature(secret, now, body, 0); err != nil {
		t.Fatalf("a fresh signature was refused: %v", err)
	}
	if err := client.VerifySignature(secret, old, body, time.Hour); err != nil {
		t.Errorf("a 10-minute-old signature within an hour's tolerance was refused: %v", err)
	}
	for name, err := range map[string]error{
		"another body":          client.VerifySignature(secret, now, []byte(`{"amount_cents":4201}`), 0),
		"another secret":        client.VerifySignature([]byte("other"), now, body, 0),
		"older than the window": client.VerifySignature(secret, old, body, 0),
		"no header":             client.VerifySignature(secret, "", body, 0),
		"garbage":               client.VerifySignature(secret, "t=x,v1=zz", body, 0),
	} {
		if !errors.Is(err, client.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, err)
		}
	}
}

// VerifyRequest, in a provider's handler behind http.StripPrefix, accepts a
// dispatch as the executor signed it and refuses it sent with another
// method, to another path or under another key: what v1 alone accepts.
func TestVerifyRequest(t *testing.T) {
	t.Parallel()
	secret, body := []byte("s3cret"), []byte(`{"amount_cents":4200}`)
	verdicts := make(chan [2]error, 1)
	provider := httptest.NewServer(http.StripPrefix("/billing", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.ReadAll(r.Body)
		verdicts <- [2]error{
			client.VerifyRequest(secret, r, got, 0),
			client.VerifySignature(secret, r.Header.Get(client.SignatureHeader), got, 0),
		}
	})))
	defer provider.Close()
	send := func(req *http.Request) (v2, v1 error) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		v := <-verdicts
		return v[0], v[1]
	}
	signed := func() *http.Request {
		return dispatchTo(t, secret, time.Now(), http.MethodPost, provider.URL+"/billing/credits?api_key=x", "wa_k", body)
	}
	if v2, v1 := send(signed()); v2 != nil || v1 != nil {
		t.Fatalf("the dispatch as signed: v2 %v, v1 %v", v2, v1)
	}
	replays := map[string]func(r *http.Request) *http.Request{
		"another method": func(r *http.Request) *http.Request {
			again, _ := http.NewRequest(http.MethodPut, r.URL.String(), bytes.NewReader(body))
			again.Header = r.Header
			return again
		},
		"another path": func(r *http.Request) *http.Request {
			again, _ := http.NewRequest(r.Method, provider.URL+"/billing/refunds", bytes.NewReader(body))
			again.Header = r.Header
			return again
		},
		"another key": func(r *http.Request) *http.Request {
			r.Header.Set("Idempotency-Key", "wa_other")
			return r
		},
	}
	for name, replay := range replays {
		v2, v1 := send(replay(signed()))
		if !errors.Is(v2, client.ErrBadSignature) {
			t.Errorf("%s: VerifyRequest = %v, want ErrBadSignature", name, v2)
		}
		if v1 != nil {
			t.Errorf("%s: VerifySignature = %v; v1 covers only the body and the time", name, v1)
		}
	}
}

// The client's verifiers answer every signature vector as the scheme says
// (internal/signature/testdata/vectors.json, docs/CALLBACKS.md).
func TestSignatureVectors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../internal/signature/testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	type request struct {
		Method         string `json:"method"`
		Path           string `json:"path"`
		IdempotencyKey string `json:"idempotency_key"`
		Delivery       string `json:"delivery"`
		Body           string `json:"body"`
		Header         string `json:"header"`
	}
	var vectors struct {
		Tolerance int64 `json:"tolerance_seconds"`
		Signed    []struct {
			Name    string   `json:"name"`
			Secrets []string `json:"secrets"`
			T       int64    `json:"t"`
			request
		} `json:"signed"`
		Checked []struct {
			Name   string `json:"name"`
			Secret string `json:"secret"`
			Now    int64  `json:"now"`
			V1     bool   `json:"v1"`
			V2     bool   `json:"v2"`
			request
		} `json:"checked"`
	}
	decodeJSON(t, raw, &vectors)
	if len(vectors.Signed) == 0 || len(vectors.Checked) == 0 {
		t.Fatalf("no vectors: %s", raw[:min(len(raw), 200)])
	}
	tolerance := time.Duration(vectors.Tolerance) * time.Second
	signed := func(r request) client.SignedRequest {
		return client.SignedRequest{Method: r.Method, Path: r.Path, IdempotencyKey: r.IdempotencyKey, Delivery: r.Delivery}
	}
	for _, v := range vectors.Signed {
		for _, secret := range v.Secrets {
			at := time.Unix(v.T, 0)
			if err := client.VerifyV2At([]byte(secret), v.Header, signed(v.request), []byte(v.Body), at, tolerance); err != nil {
				t.Errorf("%s: v2 with %q: %v", v.Name, secret, err)
			}
			if err := client.VerifyV1At([]byte(secret), v.Header, []byte(v.Body), at, tolerance); err != nil {
				t.Errorf("%s: v1 with %q: %v", v.Name, secret, err)
			}
		}
	}
	for _, c := range vectors.Checked {
		now := time.Unix(c.Now, 0)
		v2 := client.VerifyV2At([]byte(c.Secret), c.Header, signed(c.request), []byte(c.Body), now, tolerance)
		v1 := client.VerifyV1At([]byte(c.Secret), c.Header, []byte(c.Body), now, tolerance)
		if (v2 == nil) != c.V2 || (v1 == nil) != c.V1 {
			t.Errorf("%s: v2 %v (want accepted %v), v1 %v (want accepted %v)", c.Name, v2, c.V2, v1, c.V1)
		}
	}
}

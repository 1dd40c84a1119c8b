package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/internal/signature"
	"github.com/countersign/countersign/receipt"
)

// devAnswered is what a test reads of dev-provider's answer.
type devAnswered struct {
	status   int
	replayed bool
	body     map[string]any
}

func (a devAnswered) code() string {
	e, _ := a.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// devPost sends one write to the dev provider at base.
func devPost(t *testing.T, base, path, key string, body []byte, header map[string]string) devAnswered {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := devAnswered{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s answered %d with no JSON body: %q", path, resp.StatusCode, raw)
	}
	return a
}

// devWrites reads GET /writes (of key, when not empty).
func devWrites(t *testing.T, base, key string) []devWrite {
	t.Helper()
	url := base + "/writes"
	if key != "" {
		url += "?key=" + key
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Writes []devWrite }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /writes = %d, %v", resp.StatusCode, err)
	}
	return list.Writes
}

// dev-provider takes a write countersign signed, once per key, refuses one
// whose signature is wrong or missing with a code naming why, and lists
// every write it got.
func TestDevProviderChecksSignaturesAndAnswersARepeatAsTheFirst(t *testing.T) {
	t.Parallel()
	secret := []byte("dev-provider-test-secret-of-32-bytes")
	srv := httptest.NewServer(newDevProviderHandler([][]byte{[]byte("an-older-secret"), secret}, "http://127.0.0.1:9/.well-known/jwks.json", io.Discard))
	defer srv.Close()
	body := []byte(`{"title": "Printer jammed", "body": "E42"}`)
	signed := func(path, key string, body []byte, secret []byte) map[string]string {
		return map[string]string{client.SignatureHeader: signature.Sign([][]byte{secret}, time.Now(),
			signature.Request{Method: http.MethodPost, Path: path, IdempotencyKey: key}, body)}
	}

	first := devPost(t, srv.URL, "/tickets", "wa_one", body, signed("/tickets", "wa_one", body, secret))
	if first.status != http.StatusCreated || first.replayed || first.body["id"] != "dev_1" || first.body["idempotency_key"] != "wa_one" {
		t.Fatalf("the first write = %d %v", first.status, first.body)
	}
	again := devPost(t, srv.URL, "/tickets", "wa_one", body, signed("/tickets", "wa_one", body, secret))
	if again.status != http.StatusCreated || !again.replayed || again.body["id"] != "dev_1" {
		t.Errorf("the repeat = %d (replayed %v) %v; want the first answer", again.status, again.replayed, again.body)
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		body   []byte
		status int
		code   string
	}{
		{"another secret", signed("/tickets", "wa_two", body, []byte("not-the-dispatch-secret")), body, http.StatusUnauthorized, "bad_signature"},
		{"a changed body", signed("/tickets", "wa_two", body, secret), []byte(`{"title": "Printer jammed", "body": "E43"}`), http.StatusUnauthorized, "bad_signature"},
		{"another path", signed("/other", "wa_two", body, secret), body, http.StatusUnauthorized, "bad_signature"},
		{"no signature", nil, body, http.StatusUnauthorized, "unsigned"},
	} {
		if a := devPost(t, srv.URL, "/tickets", "wa_two", c.body, c.header); a.status != c.status || a.code() != c.code {
			t.Errorf("%s: %d %v; want %d %s", c.name, a.status, a.body, c.status, c.code)
		}
	}
	if a := devPost(t, srv.URL, "/tickets", "", body, signed("/tickets", "", body, secret)); a.status != http.StatusBadRequest || a.code() != "missing_idempotency_key" {
		t.Errorf("no Idempotency-Key: %d %v", a.status, a.body)
	}

	all := devWrites(t, srv.URL, "")
	if len(all) != 7 {
		t.Fatalf("GET /writes lists %d writes, want 7: %+v", len(all), all)
	}
	if w := all[0]; w.N != 1 || w.Path != "/tickets" || w.Signature != "valid" || w.Status != http.StatusCreated || w.Replayed || w.Refused != "" {
		t.Errorf("the first write listed: %+v", w)
	}
	if b, _ := all[0].Body.(map[string]any); b["body"] != "E42" {
		t.Errorf("the first write's body listed: %#v", all[0].Body)
	}
	if w := all[2]; w.Status != http.StatusUnauthorized || w.Refused != "bad_signature" || w.Signature != "bad" {
		t.Errorf("a refused write listed: %+v", w)
	}
	if one := devWrites(t, srv.URL, "wa_one"); len(one) != 2 || !one[1].Replayed {
		t.Errorf("GET /writes?key=wa_one = %+v", one)
	}
}

// A write carrying a receipt is taken when countersign's JWKS verifies it
// for that key and body, and refused with a 403 naming why otherwise; the
// JWKS is fetched again for a key it did not hold (a rotation).
func TestDevProviderChecksReceiptsAgainstTheJWKS(t *testing.T) {
	t.Parallel()
	newKeys := func() *receipt.KeySet {
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return receipt.NewKeySet(key)
	}
	keys, rotated := newKeys(), newKeys()
	published := keys
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(published.MarshalJWKS())
	}))
	defer jwks.Close()
	srv := httptest.NewServer(newDevProviderHandler([][]byte{[]byte("secret")}, jwks.URL, io.Discard))
	defer srv.Close()

	body := []byte(`{"order": "ord_1", "amount_cents": 100, "currency": "EUR"}`)
	digest, err := receipt.EffectDigest(body)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(ks *receipt.KeySet, key string, exp time.Time) map[string]string {
		token, err := ks.Sign(receipt.Claims{Key: key, Tool: "payments.refund", Agent: "my-agent", EffectSHA256: digest,
			DecidedBy: "local:reviewer", Via: "human", IssuedAt: time.Now().Unix(), Expiry: exp.Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{receipt.Header: token}
	}
	later := time.Now().Add(time.Hour)
	if a := devPost(t, srv.URL, "/refunds", "wa_r1", body, sign(keys, "wa_r1", later)); a.status != http.StatusCreated {
		t.Fatalf("a write with its receipt = %d %v", a.status, a.body)
	}
	if w := devWrites(t, srv.URL, "wa_r1"); len(w) != 1 || w[0].Receipt == nil || w[0].Receipt.DecidedBy != "local:reviewer" || w[0].Signature != "none" {
		t.Errorf("the write listed: %+v", w)
	}
	for _, c := range []struct {
		name   string
		key    string
		body   []byte
		header map[string]string
		code   string
	}{
		{"a changed body", "wa_r2", []byte(`{"order": "ord_1", "amount_cents": 101, "currency": "EUR"}`), sign(keys, "wa_r2", later), "receipt_effect_mismatch"},
		{"another key's receipt", "wa_r2", body, sign(keys, "wa_r1", later), "receipt_other_key"},
		{"an expired receipt", "wa_r2", body, sign(keys, "wa_r2", time.Now().Add(-time.Minute)), "receipt_expired"},
		{"a forged receipt", "wa_r2", body, sign(newKeys(), "wa_r2", later), "receipt_unknown_key"},
		{"not a receipt", "wa_r2", body, map[string]string{receipt.Header: "a.b"}, "receipt_malformed"},
	} {
		if a := devPost(t, srv.URL, "/refunds", c.key, c.body, c.header); a.status != http.StatusForbidden || a.code() != c.code {
			t.Errorf("%s: %d %v; want 403 %s", c.name, a.status, a.body, c.code)
		}
	}
	// countersign's key rotated since the JWKS was read: read again.
	published = rotated
	if a := devPost(t, srv.URL, "/refunds", "wa_r3", body, sign(rotated, "wa_r3", later)); a.status != http.StatusCreated {
		t.Errorf("a receipt of the rotated key = %d %v", a.status, a.body)
	}
}

// dev-provider needs a dispatch secret, from its flag or the environment,
// and finds serve's JWKS from the environment countersign init writes.
func TestDevProviderArguments(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	if _, code, ok := parseDevProviderArgs(nil, envFrom(nil), &stdout, &stderr); ok || code != 2 || !strings.Contains(stderr.String(), "COUNTERSIGN_DISPATCH_SECRET") {
		t.Errorf("without a secret: ok %v, code %d, %q", ok, code, stderr.String())
	}
	opts, _, ok := parseDevProviderArgs([]string{"--listen", "127.0.0.1:0"}, envFrom(map[string]string{
		"COUNTERSIGN_DISPATCH_SECRET": "new,old", "COUNTERSIGN_URL": "http://127.0.0.1:18080/"}), &stdout, &stderr)
	if !ok || opts.listen != "127.0.0.1:0" || len(opts.secrets) != 2 || string(opts.secrets[1]) != "old" || opts.jwks != "http://127.0.0.1:18080/.well-known/jwks.json" {
		t.Errorf("from the environment: %v %+v", ok, opts)
	}
	opts, _, ok = parseDevProviderArgs([]string{"--secret", "s", "--jwks", "http://127.0.0.1:1/k"}, envFrom(map[string]string{"COUNTERSIGN_DISPATCH_SECRET": "env"}), &stdout, &stderr)
	if !ok || len(opts.secrets) != 1 || string(opts.secrets[0]) != "s" || opts.jwks != "http://127.0.0.1:1/k" || opts.listen != devProviderListen {
		t.Errorf("from the flags: %v %+v", ok, opts)
	}
	if got := devProviderJWKS(envFrom(map[string]string{"COUNTERSIGN_LISTEN": "127.0.0.1:18081"})); got != "http://127.0.0.1:18081/.well-known/jwks.json" {
		t.Errorf("from COUNTERSIGN_LISTEN: %s", got)
	}
}

package receipt_test

import (
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/receipt"
)

// provider is a provider that takes a write only with a receipt that
// approves it, checked against countersign's JWKS at jwksURL; it keeps
// every write it took.
type provider struct {
	mu     sync.Mutex
	writes []string
}

func (p *provider) handler(t *testing.T, jwksURL string, now time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := receipt.FetchVerifier(r.Context(), nil, jwksURL)
		if err != nil {
			t.Errorf("fetch JWKS: %v", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		v.Now = func() time.Time { return now }
		body, _ := io.ReadAll(r.Body)
		if _, err := v.VerifyRequest(r, "billing.credit", body); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		p.mu.Lock()
		p.writes = append(p.writes, string(body))
		p.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
}

// TestProviderRefusesWhatNobodyApproved runs a provider with the Go
// verifier: it takes the approved write and refuses a write with no
// receipt, an expired receipt, a receipt for another key, a body that
// differs from the approved effect, and a wrong signature.
func TestProviderRefusesWhatNobodyApproved(t *testing.T) {
	signer := seededKey(7)
	ks := receipt.NewKeySet(signer)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(ks.MarshalJWKS())
	}))
	defer jwks.Close()
	now := time.Unix(vectorIat+120, 0)
	var p provider
	srv := httptest.NewServer(p.handler(t, jwks.URL, now))
	defer srv.Close()

	digest, err := receipt.EffectDigest([]byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	claims := receipt.Claims{Key: vectorKeyName, Tool: "billing.credit", Agent: "billing-agent", EffectSHA256: digest,
		DecidedBy: "policy:small", Via: "policy", IssuedAt: vectorIat, Expiry: vectorIat + 600}
	good, err := ks.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	expiredClaims := claims
	expiredClaims.Expiry = vectorIat + 60
	expired, _ := ks.Sign(expiredClaims)
	strangerSigned, _ := receipt.NewKeySet(seededKey(99)).Sign(claims)
	parts := strings.Split(good, ".")
	// Claims edited after signing: the signature no longer matches.
	otherClaims := claims
	otherClaims.EffectSHA256 = strings.Repeat("0", 64)
	tampered, _ := ks.Sign(otherClaims)
	wrongSig := strings.Split(tampered, ".")[0] + "." + strings.Split(tampered, ".")[1] + "." + parts[2]

	cases := []struct {
		name, receipt, key, body string
		want                     int
	}{
		{"no receipt", "", vectorKeyName, vectorBody, http.StatusForbidden},
		{"an expired receipt", expired, vectorKeyName, vectorBody, http.StatusForbidden},
		{"a receipt for another key", good, "wa_" + strings.Repeat("1", 64), vectorBody, http.StatusForbidden},
		{"a body that differs from the approved effect", good, vectorKeyName, strings.Replace(vectorBody, "USD", "EUR", 1), http.StatusForbidden},
		{"a wrong signature", wrongSig, vectorKeyName, vectorBody, http.StatusForbidden},
		{"a key the JWKS does not hold", strangerSigned, vectorKeyName, vectorBody, http.StatusForbidden},
		{"the approved write", good, vectorKeyName, vectorBody, http.StatusCreated},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/credits", strings.NewReader(c.body))
		req.Header.Set("Idempotency-Key", c.key)
		if c.receipt != "" {
			req.Header.Set(receipt.Header, c.receipt)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, msg, c.want)
		}
	}
	if len(p.writes) != 1 || p.writes[0] != vectorBody {
		t.Errorf("provider took %q, want the approved write alone", p.writes)
	}
}

// TestKeySetLoads reads the signing key from the environment, from a file
// it names, and from the data directory, where a local run's key is
// generated once and kept across restarts.
func TestKeySetLoads(t *testing.T) {
	current, older := seededKey(1), seededKey(101)
	curPEM, _ := receipt.MarshalPrivateKey(current)
	oldPEM, _ := receipt.MarshalPrivateKey(older)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	ks, err := receipt.LoadKeySet(env(map[string]string{receipt.EnvKey: string(curPEM) + string(oldPEM)}), "")
	if err != nil {
		t.Fatal(err)
	}
	if ks.KID() != receipt.KeyID(current.Public().(ed25519.PublicKey)) || len(ks.JWKS().Keys) != 2 {
		t.Errorf("from %s: kid %s, %d keys; want the first key signing and both published", receipt.EnvKey, ks.KID(), len(ks.JWKS().Keys))
	}

	file := t.TempDir() + "/key.pem"
	if err := writeFile(file, oldPEM); err != nil {
		t.Fatal(err)
	}
	ks, err = receipt.LoadKeySet(env(map[string]string{receipt.EnvKeyFile: file}), "")
	if err != nil || ks.KID() != receipt.KeyID(older.Public().(ed25519.PublicKey)) {
		t.Errorf("from %s: %v, %v", receipt.EnvKeyFile, ks, err)
	}

	if ks, err := receipt.LoadKeySet(env(nil), ""); ks != nil || err != nil {
		t.Errorf("no key and no data directory: %v, %v; want none", ks, err)
	}
	dir := t.TempDir()
	first, err := receipt.LoadKeySet(env(nil), dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := receipt.LoadKeySet(env(nil), dir)
	if err != nil || first.KID() != second.KID() {
		t.Errorf("the data directory's key changed across loads: %s then %s (%v)", first.KID(), second.KID(), err)
	}

	if _, err := receipt.ParseKeySet([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n-----END PUBLIC KEY-----\n")); err == nil {
		t.Error("a public key alone was taken as a signing key")
	}
	if _, err := receipt.ParseKeySet([]byte("not pem")); err == nil {
		t.Error("text that is not PEM was taken")
	}
}

func writeFile(path string, b []byte) error {
	return os.WriteFile(path, b, 0o600)
}

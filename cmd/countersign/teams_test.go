package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/countersign/countersign/store/storetest"
)

// serve with Teams configured and a tool on Teams alone: the card is
// posted to a local Bot Connector, an invoke it signs decides the request
// at POST /teams/messages, and one it did not sign is 401.
func TestServePostsATeamsCardAndASignedClickDecides(t *testing.T) {
	t.Parallel()
	const appID = "00000000-0000-4000-8000-0000000000b0"
	const ana = "6a1f0c4e-1111-4222-8333-00000000000a"
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var posted []map[string]any
	var srv *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /meta", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": "https://api.botframework.com", "jwks_uri": srv.URL + "/keys"})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_secret") != "app-password" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "bot-token", "expires_in": 3600})
	})
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", func(w http.ResponseWriter, r *http.Request) {
		var act map[string]any
		_ = json.NewDecoder(r.Body).Decode(&act)
		if r.Header.Get("Authorization") != "Bearer bot-token" || r.PathValue("conv") != "19:billing@thread.tacv2" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		posted = append(posted, act)
		mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "act-1"})
	})
	mux.HandleFunc("PUT /v3/conversations/{conv}/activities/{id}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id")})
	})
	srv = httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
teams:
  app_id: %s
  app_password: ${TEAMS_APP_PASSWORD}
  openid_metadata: %s/meta
  token_url: %s/token
  service_url: %s/
  conversations: {billing.credit: "19:billing@thread.tacv2"}
tools:
  billing.credit:
    approvers: ["teams:%s"]
    surfaces: [teams]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:]), appID, srv.URL, srv.URL, srv.URL, ana))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfg,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"TEAMS_APP_PASSWORD":          "app-password",
	}))
	created := postSmokeIntent(t, base,
		`{"run_id":"r-teams","step":1,"tool":"billing.credit","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}}`)

	var data map[string]any
	for deadline := time.Now().Add(20 * time.Second); data == nil; {
		mu.Lock()
		if len(posted) > 0 {
			att := posted[0]["attachments"].([]any)[0].(map[string]any)
			for _, a := range att["content"].(map[string]any)["actions"].([]any) {
				if a := a.(map[string]any); a["verb"] == "approve" {
					data = a["data"].(map[string]any)
				}
			}
		}
		mu.Unlock()
		if data == nil {
			if time.Now().After(deadline) {
				t.Fatalf("no card was posted: %s", logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	sign := func(k *rsa.PrivateKey) string {
		sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: "https://api.botframework.com", Audience: jwt.Audience{appID},
			Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), NotBefore: jwt.NewNumericDate(time.Now().Add(-time.Minute))}).
			Claims(map[string]any{"serviceurl": srv.URL + "/"}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	click := func(token string) (int, string) {
		body, _ := json.Marshal(map[string]any{
			"type": "invoke", "name": "adaptiveCard/action", "serviceUrl": srv.URL + "/", "replyToId": "act-1",
			"from":         map[string]any{"id": "29:x", "aadObjectId": ana},
			"conversation": map[string]any{"id": "19:billing@thread.tacv2"},
			"value":        map[string]any{"action": map[string]any{"type": "Action.Execute", "verb": "approve", "data": data}},
		})
		r, _ := http.NewRequest(http.MethodPost, base+"/teams/messages", bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	status := func() string {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/requests/"+created.Key, nil)
		req.Header.Set("Authorization", "Bearer "+smokeToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct{ Status string }
		_ = json.NewDecoder(resp.Body).Decode(&got)
		return got.Status
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	if code, body := click(sign(other)); code != http.StatusUnauthorized {
		t.Fatalf("a click signed by another key = %d %s", code, body)
	}
	if s := status(); s != "pending" {
		t.Fatalf("the request is %q after an unsigned click, want pending", s)
	}
	code, body := click(sign(key))
	if code != http.StatusOK || !strings.Contains(body, "Approved by teams:"+ana) {
		t.Fatalf("the signed click = %d %s", code, body)
	}
	if s := status(); s != "approved" {
		t.Fatalf("the request is %q after the click, want approved", s)
	}
}

package onedecision_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/countersign/countersign/teamssurface"
)

// connector is a local Bot Connector and Bot Framework login, as the
// teamssurface tests run one: OpenID metadata, the keys its tokens are
// signed with, the bot's token, and the activities posted, replaced and
// replied, by conversation and activity.
type connector struct {
	t      *testing.T
	server *httptest.Server
	key    *rsa.PrivateKey

	mu      sync.Mutex
	posted  map[string]map[string]any   // activity id → the card posted
	updated map[string][]map[string]any // activity id → its replacements, in order
	replies map[string][]map[string]any // activity id → its thread replies
	n       int
}

func newConnector(t *testing.T) *connector {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := &connector{t: t, key: key, posted: map[string]map[string]any{}, updated: map[string][]map[string]any{}, replies: map[string][]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /meta", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": teamssurface.Issuer, "jwks_uri": c.server.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != teamsApp || r.FormValue("client_secret") != "app-password" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		writeJSON(w, map[string]any{"token_type": "Bearer", "access_token": "bot-token", "expires_in": 3600})
	})
	record := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer bot-token" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			var act map[string]any
			if err := json.NewDecoder(r.Body).Decode(&act); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			c.n++
			id := fmt.Sprintf("act-%d", c.n)
			switch kind {
			case "post":
				c.posted[id] = act
			case "update":
				id = r.PathValue("id")
				c.updated[id] = append(c.updated[id], act)
			case "reply":
				c.replies[r.PathValue("id")] = append(c.replies[r.PathValue("id")], act)
			}
			writeJSON(w, map[string]any{"id": id})
		}
	}
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", record("post"))
	mux.HandleFunc("PUT /v3/conversations/{conv}/activities/{id}", record("update"))
	mux.HandleFunc("POST /v3/conversations/{conv}/activities/{id}", record("reply"))
	c.server = httptest.NewServer(mux)
	t.Cleanup(c.server.Close)
	return c
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// token is a Bot Framework token for the bot, signed by the connector.
func (c *connector) token() string {
	c.t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: c.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		c.t.Fatal(err)
	}
	now := time.Now()
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: teamssurface.Issuer, Audience: jwt.Audience{teamsApp},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), IssuedAt: jwt.NewNumericDate(now)}).
		Claims(map[string]any{"serviceurl": c.server.URL + "/"}).Serialize()
	if err != nil {
		c.t.Fatal(err)
	}
	return raw
}

// invoke is the adaptiveCard/action activity Teams sends when user clicks
// the button carrying data on card activityID.
func (c *connector) invoke(user, activityID string, data map[string]any) map[string]any {
	return map[string]any{
		"type": "invoke", "name": teamssurface.InvokeName, "id": "inv-" + activityID,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "channelId": "msteams",
		"serviceUrl": c.server.URL + "/", "replyToId": activityID,
		"from":         map[string]any{"id": "29:" + user, "aadObjectId": user, "name": "Ana"},
		"recipient":    map[string]any{"id": "28:" + teamsApp, "name": "countersign"},
		"conversation": map[string]any{"id": teamsConv, "conversationType": "channel"},
		"value":        map[string]any{"action": map[string]any{"type": "Action.Execute", "verb": data["verdict"], "data": data}, "trigger": "manual"},
	}
}

// cardOf is the Adaptive Card an activity (or an invoke's answer) carries,
// as JSON text.
func cardOf(act map[string]any) string {
	if act["type"] == teamssurface.CardType {
		b, _ := json.Marshal(act["value"])
		return string(b)
	}
	atts, _ := act["attachments"].([]any)
	if len(atts) != 1 {
		return ""
	}
	b, _ := json.Marshal(atts[0].(map[string]any)["content"])
	return string(b)
}

// startMailpit builds and starts mailpit (the tool pinned in go.mod) on
// loopback, plain SMTP, and returns its SMTP address and API base.
func startMailpit(t *testing.T) (smtpAddr, api string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mailpit")
	build := exec.Command("go", "build", "-o", bin, "github.com/axllent/mailpit")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building mailpit: %v\n%s", err, out)
	}
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	smtpAddr, httpAddr := free(), free()
	cmd := exec.Command(bin, "--smtp", smtpAddr, "--listen", httpAddr, "--disable-version-check", "--smtp-disable-rdns",
		"--database", filepath.Join(dir, "mail.db"), "--max", "5000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	api = "http://" + httpAddr
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", smtpAddr)
		if err == nil {
			c.Close()
			if r, err := http.Get(api + "/api/v1/messages"); err == nil {
				r.Body.Close()
				return smtpAddr, api
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // polling for the server to listen
	}
}

// mail is one message mailpit holds.
type mail struct {
	ID      string
	Subject string
	To      []struct{ Address string }
	Text    string
}

// messages reads every message mailpit holds, with its text when asked.
func messages(t *testing.T, api string, text bool) []mail {
	t.Helper()
	var list struct{ Messages []mail }
	getJSON(t, api+"/api/v1/messages?limit=5000", &list)
	for i := range list.Messages {
		if !text {
			break
		}
		var m struct{ Text string }
		getJSON(t, api+"/api/v1/message/"+list.Messages[i].ID, &m)
		list.Messages[i].Text = m.Text
	}
	return list.Messages
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

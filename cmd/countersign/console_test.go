package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"

	"github.com/countersign/countersign/store/storetest"
)

// serve with a console section mounts /console/: a reviewer signs in at a
// real provider and finds the request waiting for them, and the log names
// neither the client secret nor the session.
func TestServeMountsTheConsole(t *testing.T) {
	t.Parallel()
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	oc := idp.Config()
	sum := sha256.Sum256([]byte(smokeToken))
	path := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [oidc:group:finance]
    dispatch: {url: "http://127.0.0.1:9/credits"}
console:
  issuer: %s
  client_id: %s
  client_secret: ${CONSOLE_CLIENT_SECRET}
  redirect_url: http://%s/console/callback
  groups_claim: groups
`, hex.EncodeToString(sum[:]), oc.Issuer, oc.ClientID, addr))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          path,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          addr,
		"CONSOLE_CLIENT_SECRET":       oc.ClientSecret,
	}))

	req, _ := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(
		`{"run_id":"r-console","step":1,"tool":"billing.credit","summary":"Credit to inv_console","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}}`))
	req.Header.Set("Authorization", "Bearer "+smokeToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("intake answered %d", resp.StatusCode)
	}

	idp.QueueUser(&mockoidc.MockUser{Subject: "sub-ana", Email: "ana@example.com", EmailVerified: true, Groups: []string{"finance"}})
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	resp, err = client.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "oidc:ana@example.com") || !strings.Contains(string(body), "Credit to inv_console") {
		t.Fatalf("the console answered %d after signing in:\n%s", resp.StatusCode, body)
	}
	if strings.Contains(logs.String(), oc.ClientSecret) {
		t.Error("the log contains the console's client secret")
	}
}

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

// serve with email configured and a tool on email alone: the request's
// approver gets its message through a real SMTP server (mailpit, the tool
// pinned in go.mod, on loopback), and the link's page decides it.
func TestServeSendsEmailAndItsLinkDecides(t *testing.T) {
	t.Parallel()
	smtpAddr, api := startMailpit(t)
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
email:
  smtp: {addr: %q, from: "countersign@example.com", starttls: opportunistic}
  link_base: https://countersign.example.com/
tools:
  billing.credit:
    approvers: ["email:ana@example.com"]
    surfaces: [email]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:]), smtpAddr))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfg,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}))
	created := postSmokeIntent(t, base,
		`{"run_id":"r-mail","step":1,"tool":"billing.credit","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}}`)

	var text string
	deadline := time.Now().Add(20 * time.Second)
	for text == "" {
		var list struct{ Messages []struct{ ID string } }
		getJSONOf(t, api+"/api/v1/messages", &list)
		if len(list.Messages) > 0 {
			var m struct{ Text string }
			getJSONOf(t, api+"/api/v1/message/"+list.Messages[0].ID, &m)
			text = m.Text
		} else if time.Now().After(deadline) {
			t.Fatalf("no message came: %s", logs.String())
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	match := regexp.MustCompile(`(?m)^Approve:\s*\n(https://countersign\.example\.com/email/links/(\S+))`).FindStringSubmatch(text)
	if match == nil {
		t.Fatalf("the message has no approve link under link_base:\n%s", text)
	}
	link := base + "/email/links/" + match[2]
	if r, err := http.Get(link); err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET of the link: %v %v", r, err)
	}
	r, err := http.PostForm(link, url.Values{"token": {match[2]}, "address": {"ana@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusOK || !strings.Contains(string(page), "You approved") {
		t.Fatalf("POST of the page = %d\n%s", r.StatusCode, page)
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
	if s := status(); s != "approved" {
		t.Fatalf("the request is %q after the link's POST, want approved", s)
	}
}

// startMailpit builds and starts mailpit on loopback (plain SMTP, any
// login) and returns its SMTP address and API base.
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
		"--database", filepath.Join(dir, "mail.db"))
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
		time.Sleep(50 * time.Millisecond)
	}
}

func getJSONOf(t *testing.T, url string, into any) {
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

package emailsurface_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// mailpit is a real SMTP server (github.com/axllent/mailpit, the tool
// pinned in go.mod) on loopback, requiring STARTTLS and a login, and its
// HTTP API the tests read the messages through.
type mailpit struct {
	SMTPAddr string
	API      string
	TLS      *tls.Config // trusts the server's certificate
	User     string
	Password string
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// mailpitBinary builds mailpit once per test process, at the version
// go.mod pins.
func mailpitBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mailpit-bin")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "mailpit")
		cmd := exec.Command("go", "build", "-o", binary, "github.com/axllent/mailpit")
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building mailpit: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startMailpit starts a mailpit for one test; extra are more flags.
func startMailpit(t *testing.T, starttls bool) *mailpit {
	t.Helper()
	bin := mailpitBinary(t)
	dir := t.TempDir()
	m := &mailpit{SMTPAddr: freePort(t), API: "http://" + freePort(t), User: "countersign", Password: "s3cret-pass"}
	args := []string{"--smtp", m.SMTPAddr, "--listen", m.API[len("http://"):], "--disable-version-check", "--smtp-disable-rdns",
		"--database", filepath.Join(dir, "mail.db")}
	if starttls {
		certFile, keyFile, pool := selfSigned(t, dir)
		m.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		auth := filepath.Join(dir, "auth")
		if err := os.WriteFile(auth, []byte(m.User+":"+m.Password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--smtp-tls-cert", certFile, "--smtp-tls-key", keyFile, "--smtp-require-starttls", "--smtp-auth-file", auth)
	} else {
		args = append(args, "--smtp-auth-accept-any", "--smtp-auth-allow-insecure")
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if testing.Verbose() {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(m.API + "/api/v1/messages")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for {
		c, err := net.Dial("tcp", m.SMTPAddr)
		if err == nil {
			c.Close()
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("mailpit's SMTP did not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// message is a message as mailpit's API lists it, with its text.
type message struct {
	ID        string
	MessageID string
	Subject   string
	To        []struct{ Address string }
	InReplyTo string
	Text      string
}

// messages are every message mailpit holds, oldest first, with their text.
func (m *mailpit) messages(t *testing.T) []message {
	t.Helper()
	var list struct{ Messages []message }
	getJSON(t, m.API+"/api/v1/messages?limit=1000", &list)
	out := make([]message, 0, len(list.Messages))
	for i := len(list.Messages) - 1; i >= 0; i-- {
		msg := list.Messages[i]
		var full struct {
			Text      string
			InReplyTo string
		}
		getJSON(t, m.API+"/api/v1/message/"+msg.ID, &full)
		msg.Text = full.Text
		var headers map[string][]string
		getJSON(t, m.API+"/api/v1/message/"+msg.ID+"/headers", &headers)
		if v := headers["In-Reply-To"]; len(v) > 0 {
			msg.InReplyTo = v[0]
		}
		out = append(out, msg)
	}
	return out
}

func getJSON(t *testing.T, url string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

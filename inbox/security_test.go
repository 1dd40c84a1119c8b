package inbox

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// A page that reaches the listener under another name (DNS rebinding) is
// refused before anything is read.
func TestNonLoopbackHostIsForbidden(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		for host, want := range map[string]int{
			"evil.example":           http.StatusForbidden,
			"evil.example:8080":      http.StatusForbidden,
			"127.0.0.1.nip.io":       http.StatusForbidden,
			"localhost.evil.example": http.StatusForbidden,
			"10.0.0.5:8080":          http.StatusForbidden,
			"localhost":              http.StatusOK,
			"LOCALHOST:8080":         http.StatusOK,
			"127.0.0.1:8080":         http.StatusOK,
			"[::1]:8080":             http.StatusOK,
			"[::1]":                  http.StatusOK,
		} {
			r, err := http.NewRequest(http.MethodGet, b.server.URL+DefaultPrefix+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Host = host
			r.AddCookie(b.server.sessionCookie()) // a client's jar files cookies under the Host it sends
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			if status, body := readAll(t, resp); status != want {
				t.Errorf("Host %s: %d, want %d\n%s", host, status, want, body)
			}
		}
	})
}

// A client on another machine is refused even when it writes a loopback Host:
// serve may listen on every interface.
func TestRemotePeerIsForbidden(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		srv := setupWith(t, drv).server
		h, cookie := srv.Config.Handler, srv.sessionCookie()
		for remote, want := range map[string]int{
			"203.0.113.7:51000": http.StatusForbidden,
			"[2001:db8::1]:443": http.StatusForbidden,
			"not-an-address":    http.StatusForbidden,
			"127.0.0.1:51000":   http.StatusOK,
			"[::1]:51000":       http.StatusOK,
		} {
			r := httptest.NewRequest(http.MethodGet, DefaultPrefix+"/", nil)
			r.Host, r.RemoteAddr = "127.0.0.1:8080", remote
			r.AddCookie(cookie) // the session opens nothing from another machine
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != want {
				t.Errorf("peer %s: %d, want %d", remote, w.Code, want)
			}
		}
	})
}

// A form posted from another site decides nothing, even with the session
// cookie (SameSite=Strict keeps browsers from sending it; the check does not
// rely on that).
func TestCrossOriginPostIsRefused(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		if b.server.sessionCookie() == nil {
			t.Fatal("the client has no session")
		}
		req := b.submit(t, nil)
		form := decisionForm(req, store.VerdictApprove)
		for name, header := range map[string]http.Header{
			"Sec-Fetch-Site cross-site": {"Sec-Fetch-Site": {"cross-site"}},
			"foreign Origin":            {"Sec-Fetch-Site": nil, "Origin": {"http://evil.example"}},
		} {
			resp := post(t, b.server, DefaultPrefix+"/decide", form, header)
			status, body := readAll(t, resp)
			if status != http.StatusForbidden || !strings.Contains(body, "sent from another site") {
				t.Errorf("%s: %d\n%s", name, status, body)
			}
		}
		if n := b.count(t, `SELECT count(*) FROM decisions`); n != 0 {
			t.Fatalf("%d decisions recorded by cross-origin posts", n)
		}
	})
}

func TestOversizeFormIsRefused(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		form := decisionForm(b.submit(t, nil), store.VerdictApprove)
		form.Set("padding", strings.Repeat("x", maxFormBytes))
		status, _ := readAll(t, post(t, b.server, DefaultPrefix+"/decide", form, nil))
		if status != http.StatusRequestEntityTooLarge {
			t.Fatalf("oversize form: %d, want 413", status)
		}
		malformed := url.Values{fieldRequestID: {"x"}, fieldVerdict: {"approve"}}
		if status, _ := readAll(t, post(t, b.server, DefaultPrefix+"/decide", malformed, nil)); status != http.StatusBadRequest {
			t.Fatalf("incomplete form: %d, want 400", status)
		}
	})
}

// The pages cannot be framed, so a hidden Approve button cannot be clickjacked.
func TestPagesRefuseFraming(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		resp, err := b.server.client.Get(b.server.URL + DefaultPrefix + "/")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Fatalf("headers: %v", resp.Header)
		}
	})
}

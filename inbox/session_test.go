package inbox

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// inboxPaths are every page of the inbox, for a request that exists.
func inboxPaths(req store.Request) []string {
	return []string{
		DefaultPrefix + "/",
		DefaultPrefix + "/requests/" + req.ID,
		DefaultPrefix + "/requests/" + req.Key,
		DefaultPrefix + "/lookup?q=" + req.Key[:16],
		DefaultPrefix + "/lookup?q=pending",
		DefaultPrefix + "/nosuchpage",
	}
}

// assertRefused fails unless the answer is the refusal page, saying how to
// get in and showing nothing of the request.
func assertRefused(t *testing.T, what string, status int, body string, req store.Request) {
	t.Helper()
	if status != http.StatusForbidden || !strings.Contains(body, "/inbox/?token=") {
		t.Errorf("%s: %d, want 403 saying how to get in:\n%s", what, status, body)
	}
	for _, secret := range []string{req.ID, req.Key[:16], req.Summary, "inv_8841", "4200", req.PayloadHash} {
		if strings.Contains(body, secret) {
			t.Errorf("%s: the refusal shows %q", what, secret)
		}
	}
}

// Without the session cookie every page and the decision form are refused,
// and the refusal says how to get in without showing any request.
func TestInboxWithoutSessionIsRefused(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, &approvalstest.IntentOpts{Summary: new("Credit the secret invoice")})
		anon := b.start(t, Options{Reviewer: reviewer})
		for _, path := range inboxPaths(req) {
			status, body := get(t, anon, path)
			assertRefused(t, "GET "+path, status, body, req)
		}
		status, body := readAll(t, post(t, anon, DefaultPrefix+"/decide", decisionForm(req, store.VerdictApprove), nil))
		assertRefused(t, "POST decide", status, body, req)
		if n := b.count(t, `SELECT count(*) FROM decisions`); n != 0 {
			t.Fatalf("%d decisions recorded without a session", n)
		}
		// The same pages open with the session.
		for _, path := range inboxPaths(req)[:5] {
			if status, _ := get(t, b.server, path); status != http.StatusOK {
				t.Errorf("GET %s with the session: %d", path, status)
			}
		}
	})
}

// The entry link sets an HttpOnly, SameSite=Strict cookie scoped to the
// inbox, redirects to an address without the token, and works once.
func TestEntryLinkWorksOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		s := b.start(t, Options{Reviewer: reviewer})
		entry := s.handler.EntryURL(s.URL)
		if !strings.HasPrefix(entry, s.URL+DefaultPrefix+"/?"+TokenParam+"=") || len(entry) < len(s.URL)+40 {
			t.Fatalf("entry link %s", entry)
		}

		// The token opens nothing anywhere but the entry address, and is not spent there.
		u, _ := url.Parse(entry)
		status, body := get(t, s, DefaultPrefix+"/lookup?q=pending&"+u.RawQuery)
		assertRefused(t, "the token on another page", status, body, req)

		resp, err := s.client.Get(entry)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != DefaultPrefix+"/" {
			t.Fatalf("entry link: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == SessionCookie {
				cookie = c
			}
		}
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != DefaultPrefix || len(cookie.Value) < 40 {
			t.Fatalf("session cookie %+v", cookie)
		}
		if strings.Contains(entry, cookie.Value) {
			t.Fatal("the session secret is the entry token")
		}
		if status, page := get(t, s, DefaultPrefix+"/"); status != http.StatusOK || !strings.Contains(page, req.ID) {
			t.Fatalf("the inbox with the session: %d", status)
		}

		// A second browser with the same link is refused, and stays out.
		other := &site{Server: s.Server, handler: s.handler, client: newClient()}
		resp, err = other.client.Get(entry)
		if err != nil {
			t.Fatal(err)
		}
		status, body = readAll(t, resp)
		if status != http.StatusForbidden || !strings.Contains(body, "already used") || len(resp.Cookies()) != 0 {
			t.Fatalf("the link used again: %d, cookies %v\n%s", status, resp.Cookies(), body)
		}
		status, body = get(t, other, DefaultPrefix+"/")
		assertRefused(t, "the second browser", status, body, req)

		// The first browser opening the link again is simply let in.
		resp, err = s.client.Get(entry)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != DefaultPrefix+"/" {
			t.Fatalf("the link again in the first browser: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if status, _ := get(t, s, DefaultPrefix+"/"); status != http.StatusOK {
			t.Fatalf("the first browser lost its session: %d", status)
		}
	})
}

// Cookies the inbox did not issue open nothing: made up, empty, the entry
// token itself, or another inbox's session.
func TestForgedSessionCookieIsRefused(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		s := b.start(t, Options{Reviewer: reviewer})
		entry, _ := url.Parse(s.handler.EntryURL(s.URL))
		forged := map[string]string{
			"made up":           strings.Repeat("A", 43),
			"empty":             "",
			"the entry token":   entry.Query().Get(TokenParam),
			"another's session": b.server.sessionCookie().Value,
		}
		s.enter(t) // this inbox has a session; none of the above is it
		for name, value := range forged {
			r, err := http.NewRequest(http.MethodGet, s.URL+DefaultPrefix+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			r.AddCookie(&http.Cookie{Name: SessionCookie, Value: value})
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			status, body := readAll(t, resp)
			assertRefused(t, name, status, body, req)
		}
	})
}

// A reverse proxy on this machine makes every request loopback to loopback,
// which the address checks cannot tell from a local browser; without the
// session cookie it still opens nothing.
func TestLoopbackProxyWithoutSessionIsRefused(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, &approvalstest.IntentOpts{Summary: new("Credit the proxied invoice")})
		target, _ := url.Parse(b.server.URL)
		proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = "127.0.0.1" // as a proxy configured for a local upstream forwards
		}})
		t.Cleanup(proxy.Close)
		through := &site{Server: proxy, handler: b.server.handler, client: newClient()}

		for _, path := range inboxPaths(req) {
			status, body := get(t, through, path)
			assertRefused(t, "through the proxy, GET "+path, status, body, req)
		}
		status, body := readAll(t, post(t, through, DefaultPrefix+"/decide", decisionForm(req, store.VerdictApprove), nil))
		assertRefused(t, "through the proxy, POST decide", status, body, req)
		if n := b.count(t, `SELECT count(*) FROM decisions`); n != 0 {
			t.Fatalf("%d decisions recorded through the proxy", n)
		}

		// The proxy passes requests on faithfully: with the session, the same
		// request reaches the inbox.
		r, err := http.NewRequest(http.MethodGet, proxy.URL+DefaultPrefix+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.AddCookie(b.server.sessionCookie())
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		if status, page := readAll(t, resp); status != http.StatusOK || !strings.Contains(page, "Credit the proxied invoice") {
			t.Fatalf("through the proxy with the session: %d", status)
		}
	})
}

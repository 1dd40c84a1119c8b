package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// sessionOf opens the browser's session cookie.
func (br *browser) sessionOf() claims {
	br.t.Helper()
	for _, c := range br.client.Jar.Cookies(mustURL(br.t, br.b.srv.URL+Prefix+"/")) {
		if c.Name == SessionCookie {
			s, err := br.b.h.signer.open(c.Value, purposeSession, br.b.h.now())
			if err != nil {
				br.t.Fatalf("the session cookie does not open: %v", err)
			}
			return s
		}
	}
	br.t.Fatal("the browser holds no session cookie")
	return claims{}
}

// visit follows a link to another site, as a browser does.
func (br *browser) visit(link string) (*http.Response, string) {
	br.t.Helper()
	resp, err := br.client.Get(link)
	if err != nil {
		br.t.Fatalf("GET %s: %v", link, err)
	}
	return resp, read(br.t, resp)
}

// signOut posts the sign-out form and returns the answer, not followed.
func (br *browser) signOut() *http.Response {
	br.t.Helper()
	_, queue := br.get(Prefix + "/")
	br.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	defer func() { br.client.CheckRedirect = nil }()
	resp, _ := br.post(Prefix+"/logout", url.Values{"csrf": {csrf(br.t, queue)}}, nil)
	return resp
}

// Sign-out clears the session and sends the browser to the provider's
// end_session_endpoint with the ID token as id_token_hint, the client_id
// and the queue as post_logout_redirect_uri; the provider ends its
// session for that person and sends the browser back, where the console
// asks for a sign-in again.
func TestSignOutEndsTheProviderSession(t *testing.T) {
	b := setup(t)
	br := b.browser(t)
	br.login("alice@example.com")
	s := br.sessionOf()
	if s.IDToken == "" || strings.Count(s.IDToken, ".") != 2 {
		t.Fatalf("the session keeps no ID token for the sign-out: %q", s.IDToken)
	}

	resp := br.signOut()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || loc.Host != mustURL(t, b.idp.issuer()).Host {
		t.Fatalf("signing out answered %d, Location %q: want the provider's end_session_endpoint", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("id_token_hint") != s.IDToken || q.Get("client_id") != b.idp.clientID || q.Get("post_logout_redirect_uri") != b.srv.URL+Prefix+"/" {
		t.Fatalf("the sign-out's parameters are %v", q)
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == SessionCookie && c.Value == "" && c.MaxAge < 0)
	}
	if !cleared {
		t.Fatalf("signing out does not clear the session cookie: %v", resp.Header["Set-Cookie"])
	}

	resp, page := br.visit(loc.String())
	if resp.Request.URL.Host != loc.Host || resp.Request.URL.Path != "/login/username" {
		t.Fatalf("after the provider's sign-out the browser is at %s (%d):\n%s", resp.Request.URL, resp.StatusCode, page)
	}
	if n := b.idp.terminations("sub-alice@example.com"); n != 1 {
		t.Fatalf("the provider ended alice's session %d times, want 1", n)
	}
}

// An ID token too big for the cookie is not kept: the session still
// holds at most 40 groups, and sign-out names the client instead of
// hinting the token, which the provider accepts.
func TestSignOutWithoutTheTokenNamesTheClient(t *testing.T) {
	b := setup(t)
	var groups []string
	for i := range 200 {
		groups = append(groups, fmt.Sprintf("team-with-a-rather-long-name-%03d", i))
	}
	br := b.browser(t)
	br.login("bob@example.com", groups...)
	if s := br.sessionOf(); s.IDToken != "" || len(s.Groups) != maxGroups {
		t.Fatalf("the session keeps a %d-byte ID token and %d groups; want none and %d", len(s.IDToken), len(s.Groups), maxGroups)
	}
	resp := br.signOut()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("signing out answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if q := loc.Query(); q.Has("id_token_hint") || q.Get("client_id") != b.idp.clientID || q.Get("post_logout_redirect_uri") != b.srv.URL+Prefix+"/" {
		t.Fatalf("the sign-out's parameters are %v", q)
	}
	if resp, page := br.visit(loc.String()); resp.Request.URL.Path != "/login/username" {
		t.Fatalf("after the provider's sign-out the browser is at %s (%d):\n%s", resp.Request.URL, resp.StatusCode, page)
	}
}

// A provider whose discovery lists no end_session_endpoint: sign-out ends
// the console's session and says so.
func TestSignOutWithoutEndSessionEndpoint(t *testing.T) {
	b := setup(t)
	br := b.browser(t)
	br.login("alice@example.com")
	b.h.idp.mu.Lock()
	b.h.idp.endSession = "" // as discovered from a provider without one
	b.h.idp.mu.Unlock()
	_, queue := br.get(Prefix + "/")
	resp, page := br.post(Prefix+"/logout", url.Values{"csrf": {csrf(t, queue)}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="signed-out"`) {
		t.Fatalf("signing out answered %d:\n%s", resp.StatusCode, page)
	}
	br.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if resp, _ = br.get(Prefix + "/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after signing out the queue answered %d, want a redirect to sign in", resp.StatusCode)
	}
}

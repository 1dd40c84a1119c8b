package console

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/countersign/countersign/identity"
)

// maxGroups bounds the IdP groups a session keeps, so the cookie stays
// under a browser's 4 KB.
const maxGroups = 40

// maxSessionCookie bounds the session cookie's value: with its name and
// attributes it stays under the 4096 bytes every browser keeps.
const maxSessionCookie = 3800

// idp is the provider as discovered, once: serve starts even while the
// provider is out of reach, and the first sign-in after it is back works.
type idp struct {
	mu       sync.Mutex
	oauth    *oauth2.Config
	verifier *oidc.IDTokenVerifier
	// endSession is the discovery document's end_session_endpoint, "" when
	// it lists none: sign-out then ends the console's session only.
	endSession string
}

// provider discovers the provider the first time it is needed.
func (h *Handler) provider(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	h.idp.mu.Lock()
	defer h.idp.mu.Unlock()
	if h.idp.oauth != nil {
		return h.idp.oauth, h.idp.verifier, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, h.client), h.opts.Issuer)
	if err != nil {
		return nil, nil, err
	}
	scopes := []string{oidc.ScopeOpenID, "email", "profile"}
	// Providers that list a "groups" scope (Okta, Keycloak, Dex) put the
	// groups claim in the ID token only when it is asked for.
	var meta struct {
		Scopes     []string `json:"scopes_supported"`
		EndSession string   `json:"end_session_endpoint"`
	}
	if err := p.Claims(&meta); err != nil {
		meta.Scopes, meta.EndSession = nil, ""
	}
	if h.opts.GroupsClaim != "" && slices.Contains(meta.Scopes, "groups") {
		scopes = append(scopes, "groups")
	}
	if u, err := url.Parse(meta.EndSession); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		h.idp.endSession = meta.EndSession
	}
	h.idp.oauth = &oauth2.Config{
		ClientID: h.opts.ClientID, ClientSecret: h.opts.ClientSecret, RedirectURL: h.opts.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: scopes,
	}
	h.idp.verifier = p.Verifier(&oidc.Config{ClientID: h.opts.ClientID, Now: h.now})
	return h.idp.oauth, h.idp.verifier, nil
}

// localNext keeps a post-sign-in target inside the console: anything else
// (another site, //host, a scheme) leads to the queue.
func (h *Handler) localNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || next == "" || u.IsAbs() || u.Host != "" || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") ||
		!strings.HasPrefix(u.Path, h.prefix+"/") {
		return h.prefix + "/"
	}
	return next
}

// login sends the browser to the provider, with state, nonce and a PKCE
// challenge whose secrets wait in a short-lived signed cookie.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	oauth, _, err := h.provider(r.Context())
	if err != nil {
		h.logger.Warn("the identity provider is out of reach", slog.String("issuer", h.opts.Issuer), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", "5")
		h.fail(w, http.StatusServiceUnavailable, "The identity provider cannot be reached, so nobody can sign in right now. Try again in a moment.")
		return
	}
	c := claims{
		Purpose: purposeLogin, Expires: h.now().Add(loginTTL).Unix(),
		State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(),
		Next: h.localNext(r.URL.Query().Get("next")),
	}
	http.SetCookie(w, h.cookie(loginCookie, h.signer.sign(c), h.now().Add(loginTTL)))
	target := oauth.AuthCodeURL(c.State, oidc.Nonce(c.Nonce), oauth2.S256ChallengeOption(c.Verifier))
	http.Redirect(w, r, target, http.StatusFound)
}

// callback ends a sign-in: the state must be the cookie's, the code is
// exchanged with the PKCE verifier, and the ID token must verify (issuer,
// audience, expiry, signature) and carry the cookie's nonce.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	refuse := func(why string, attrs ...any) {
		h.logger.Warn("console sign-in refused: "+why, attrs...)
		http.SetCookie(w, h.cookie(loginCookie, "", h.now()))
		h.failSignIn(w, http.StatusForbidden, "The sign-in could not be completed ("+why+"). Sign in again.")
	}
	lc, err := r.Cookie(loginCookie)
	if err != nil {
		refuse("no sign-in was started in this browser, or it took more than 10 minutes")
		return
	}
	c, err := h.signer.open(lc.Value, purposeLogin, h.now())
	if err != nil {
		refuse("no sign-in was started in this browser, or it took more than 10 minutes")
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		refuse("the identity provider answered " + e)
		return
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(c.State)) != 1 {
		refuse("the state does not match this browser's sign-in")
		return
	}
	oauth, verifier, err := h.provider(r.Context())
	if err != nil {
		refuse("the identity provider is out of reach", slog.String("error", err.Error()))
		return
	}
	ctx := oidc.ClientContext(r.Context(), h.client)
	tok, err := oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(c.Verifier))
	if err != nil {
		refuse("the code could not be exchanged", slog.String("error", err.Error()))
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		refuse("the identity provider sent no ID token")
		return
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		refuse("the ID token did not verify", slog.String("error", err.Error()))
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(c.Nonce)) != 1 {
		refuse("the ID token's nonce is not this sign-in's")
		return
	}
	var all map[string]any
	if err := idt.Claims(&all); err != nil {
		refuse("the ID token's claims could not be read", slog.String("error", err.Error()))
		return
	}
	user, err := reviewerID(idt.Subject, all)
	if err != nil {
		refuse("the ID token names nobody countersign can name", slog.String("error", err.Error()))
		return
	}
	groups := h.groupsOf(all)
	expires := h.now().Add(h.opts.SessionTTL)
	s := claims{Purpose: purposeSession, Expires: expires.Unix(), User: user, Groups: groups, CSRF: randomToken(), IDToken: raw}
	value := h.signer.sign(s)
	if len(value) > maxSessionCookie {
		// The ID token is kept only as the sign-out's id_token_hint; a
		// token too big for the cookie is left out, and sign-out names the
		// client instead.
		s.IDToken = ""
		value = h.signer.sign(s)
	}
	http.SetCookie(w, h.cookie(loginCookie, "", h.now()))
	http.SetCookie(w, h.cookie(SessionCookie, value, expires))
	h.logger.Info("console sign-in", slog.String("reviewer", user), slog.Int("groups", len(groups)))
	http.Redirect(w, r, h.localNext(c.Next), http.StatusSeeOther)
}

// reviewerID names the person of an ID token: oidc:<email> when the token
// says the email is verified (in lower case), else oidc:<sub>.
func reviewerID(sub string, all map[string]any) (string, error) {
	email, _ := all["email"].(string)
	verified, _ := all["email_verified"].(bool)
	if s, ok := all["email_verified"].(string); ok { // some providers send "true"
		verified = s == "true"
	}
	value := sub
	if email != "" && verified {
		value = strings.ToLower(email)
	}
	id, err := identity.ParsePerson(string(identity.OIDC) + ":" + value)
	if err != nil {
		return "", err
	}
	if id.IsGroup() {
		return "", fmt.Errorf("%q reads as a group", id)
	}
	return id.String(), nil
}

// groupsOf reads the configured groups claim: a list of names, or one name.
func (h *Handler) groupsOf(all map[string]any) []string {
	if h.opts.GroupsClaim == "" {
		return nil
	}
	var names []string
	switch v := all[h.opts.GroupsClaim].(type) {
	case string:
		names = []string{v}
	case []any:
		for _, g := range v {
			if s, ok := g.(string); ok {
				names = append(names, s)
			}
		}
	}
	var out []string
	for _, n := range names {
		if _, err := identity.Parse(string(identity.OIDC) + ":" + identity.OIDCGroupPrefix + n); err == nil && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) > maxGroups {
		h.logger.Warn("the ID token lists more groups than a session keeps; the rest are ignored", slog.Int("groups", len(out)))
		out = out[:maxGroups]
	}
	return out
}

// logout ends the session. When the provider's discovery document lists
// an end_session_endpoint, the browser goes on there (OpenID Connect
// RP-Initiated Logout) to end the sign-in at the provider too, with the ID
// token as id_token_hint when the session kept it, the client_id, and the
// queue as post_logout_redirect_uri; else the console says it signed out.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	http.SetCookie(w, h.cookie(SessionCookie, "", h.now()))
	if _, _, err := h.provider(r.Context()); err != nil {
		h.logger.Warn("sign-out: the identity provider is out of reach; its sign-in is left as it is",
			slog.String("issuer", h.opts.Issuer), slog.String("error", err.Error()))
	}
	h.idp.mu.Lock()
	endSession := h.idp.endSession
	h.idp.mu.Unlock()
	if endSession == "" {
		h.logger.Info("console sign-out", slog.String("reviewer", s.User))
		h.render(w, http.StatusOK, "signedout", page{Title: "Signed out"})
		return
	}
	h.logger.Info("console sign-out, continued at the identity provider", slog.String("reviewer", s.User),
		slog.Bool("id_token_hint", s.IDToken != ""))
	http.Redirect(w, r, h.endSessionURL(endSession, s.IDToken), http.StatusSeeOther)
}

// endSessionURL is the provider's end_session_endpoint with the sign-out's
// parameters added to any it has.
func (h *Handler) endSessionURL(endpoint, idToken string) string {
	u, _ := url.Parse(endpoint) // parsed when discovered
	q := u.Query()
	if idToken != "" {
		q.Set("id_token_hint", idToken)
	}
	q.Set("client_id", h.opts.ClientID)
	q.Set("post_logout_redirect_uri", h.postLogoutURL())
	u.RawQuery = q.Encode()
	return u.String()
}

// postLogoutURL is the queue's address, from the redirect URL's
// (…/console/callback): where the provider sends the browser back after
// signing out. Register it at the provider as a post-logout redirect URI.
func (h *Handler) postLogoutURL() string {
	return strings.TrimSuffix(h.opts.RedirectURL, "/callback") + "/"
}

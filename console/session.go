package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"
)

// Cookie names: the session, and the sign-in under way.
const (
	SessionCookie = "countersign_console"
	loginCookie   = "countersign_console_login"
)

// loginTTL bounds a sign-in at the identity provider.
const loginTTL = 10 * time.Minute

// Purposes keep a sign-in's cookie from passing for a session and back.
const (
	purposeSession = "session"
	purposeLogin   = "login"
)

// claims is what a signed cookie carries.
type claims struct {
	Purpose string `json:"p"`
	Expires int64  `json:"e"`
	// A session's: the reviewer, their IdP groups, the CSRF token.
	User   string   `json:"u,omitempty"`
	Groups []string `json:"g,omitempty"`
	CSRF   string   `json:"c,omitempty"`
	// IDToken is the sign-in's ID token, for the sign-out's id_token_hint;
	// "" when it did not fit in the cookie.
	IDToken string `json:"i,omitempty"`
	// A sign-in's: what the callback checks, and where it leads.
	State    string `json:"s,omitempty"`
	Nonce    string `json:"n,omitempty"`
	Verifier string `json:"v,omitempty"`
	Next     string `json:"x,omitempty"`
}

// signer signs cookies with the first key and accepts any, so that a
// rotated dispatch secret keeps the sessions signed under the old one.
type signer struct{ keys [][]byte }

// newSigner derives one key per secret; without any, a random key (sessions
// then end when serve does).
func newSigner(secrets [][]byte) signer {
	var s signer
	for _, secret := range secrets {
		if len(secret) > 0 {
			mac := hmac.New(sha256.New, secret)
			mac.Write([]byte("countersign console session v1"))
			s.keys = append(s.keys, mac.Sum(nil))
		}
	}
	if len(s.keys) == 0 {
		s.keys = append(s.keys, []byte(randomToken()))
	}
	return s
}

func mac(key, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	return m.Sum(nil)
}

func (s signer) sign(c claims) string {
	payload, _ := json.Marshal(c) // claims always marshal
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(mac(s.keys[0], payload))
}

var errBadCookie = errors.New("cookie not signed by this console, expired or for another purpose")

// open returns the claims of a cookie value signed by one of the keys, for
// purpose, and not expired at now.
func (s signer) open(value, purpose string, now time.Time) (claims, error) {
	p, sig, ok := strings.Cut(value, ".")
	if !ok {
		return claims{}, errBadCookie
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	got, err2 := enc.DecodeString(sig)
	if err1 != nil || err2 != nil {
		return claims{}, errBadCookie
	}
	valid := false
	for _, k := range s.keys {
		if hmac.Equal(got, mac(k, payload)) {
			valid = true
		}
	}
	var c claims
	if !valid || json.Unmarshal(payload, &c) != nil || c.Purpose != purpose || now.Unix() >= c.Expires {
		return claims{}, errBadCookie
	}
	return c, nil
}

// randomToken returns 256 random bits, URL-safe.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// cookie builds one of the console's cookies: HttpOnly, on the console's
// path, SameSite=Lax (the provider's redirect back must carry the sign-in's
// cookie), Secure when the console is reached over https.
func (h *Handler) cookie(name, value string, expires time.Time) *http.Cookie {
	c := &http.Cookie{
		Name: name, Value: value, Path: h.prefix + "/", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode,
	}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires).Seconds())
	}
	return c
}

// session returns the request's session, if it carries a valid one.
func (h *Handler) session(r *http.Request) (claims, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return claims{}, false
	}
	s, err := h.signer.open(c.Value, purposeSession, h.now())
	return s, err == nil
}

// csrfOK reports whether a parsed form carries the session's CSRF token.
func csrfOK(r *http.Request, s claims) bool {
	got := r.PostForm.Get(fieldCSRF)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

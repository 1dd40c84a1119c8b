package inbox

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
)

// SessionCookie names the cookie that carries the inbox session's secret.
const SessionCookie = "countersign_inbox"

// TokenParam is the query parameter of the entry link that carries the
// one-time token.
const TokenParam = "token"

// Messages of the refusals, shown instead of any inbox content.
const (
	needSession = "The inbox opens only in the browser that opened the link serve printed when it started " +
		"(…/inbox/?token=…, in its banner or, with a configuration file, in its log). " +
		"Open that link here. It works once: for another browser, restart serve and open the new link."
	linkSpent = "This link was already used, or it is not the one serve printed. " +
		"It works once, in one browser. Restart serve and open the new link it prints; " +
		"if you did not use it yourself, someone else on this machine did."
)

// session is the inbox's single login. serve prints an entry link carrying a
// random token; the first request with it gets a random session secret in an
// HttpOnly, SameSite=Strict cookie, and the token is spent. Only the
// secret's hash is kept, and it is compared in constant time.
type session struct {
	mu     sync.Mutex
	token  string   // the entry token, until it is spent
	secret [32]byte // sha256 of the session secret, once issued
	issued bool
}

func newSession() *session {
	return &session{token: randomSecret()}
}

// randomSecret returns 256 random bits, URL-safe.
func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// enter spends the entry token and returns the session secret; ok is false
// when token is not the unspent entry token.
func (s *session) enter(token string) (secret string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) != 1 {
		return "", false
	}
	s.token = ""
	secret = randomSecret()
	s.secret, s.issued = sha256.Sum256([]byte(secret)), true
	return secret, true
}

// valid reports whether r carries the session's cookie.
func (s *session) valid(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return false
	}
	sum := sha256.Sum256([]byte(c.Value))
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued && subtle.ConstantTimeCompare(sum[:], s.secret[:]) == 1
}

// EntryURL is the link that opens the inbox once, for base (scheme and
// host, e.g. http://127.0.0.1:8080): serve prints it for the person at the
// terminal. After the link is used it opens nothing.
func (h *Handler) EntryURL(base string) string {
	h.session.mu.Lock()
	defer h.session.mu.Unlock()
	return base + h.prefix + "/?" + TokenParam + "=" + url.QueryEscape(h.session.token)
}

// requireSession lets through only requests with the session cookie, and
// turns the entry link into that cookie.
func (h *Handler) requireSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get(TokenParam)
		entry := token != "" && r.Method == http.MethodGet && r.URL.Path == h.prefix+"/"
		in := h.session.valid(r)
		switch {
		case in && entry:
			// Already in: drop the token from the address bar, spend nothing.
			http.Redirect(w, r, h.prefix+"/", http.StatusSeeOther)
		case in:
			next.ServeHTTP(w, r)
		case entry:
			secret, ok := h.session.enter(token)
			if !ok {
				h.logger.Warn("inbox entry link refused: already used or wrong")
				h.fail(w, http.StatusForbidden, linkSpent)
				return
			}
			http.SetCookie(w, &http.Cookie{
				Name: SessionCookie, Value: secret, Path: h.prefix,
				HttpOnly: true, SameSite: http.SameSiteStrictMode,
			})
			h.logger.Info("inbox session opened; the entry link is spent")
			http.Redirect(w, r, h.prefix+"/", http.StatusSeeOther)
		default:
			h.logger.Debug("inbox request without a session refused", slog.String("path", r.URL.Path))
			h.fail(w, http.StatusForbidden, needSession)
		}
	})
}

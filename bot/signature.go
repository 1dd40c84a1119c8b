package bot

import (
	"errors"
	"io"
	"net/http"

	"github.com/slack-go/slack"
)

// readSigned reads a request body of at most maxBodyBytes and checks Slack's
// v0 signature over it (and the five-minute timestamp window), with any of
// the signing secrets, before anyone parses it. On failure it has answered 401 or 413 and returns false. The
// verifier's error is never logged or returned: it may carry the expected
// signature.
func (b *Bot) readSigned(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > maxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the body is too large")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", "the body is too large")
		} else {
			writeError(w, http.StatusBadRequest, "unreadable", "the body could not be read")
		}
		return nil, false
	}
	if !verifyAny(r.Header, body, b.secrets) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "the request signature is missing, invalid or expired")
		return nil, false
	}
	return body, true
}

// verifyAny reports whether body carries a valid, fresh Slack signature made
// with one of secrets. Every secret is tried, so the time taken does not
// say which one matched.
func verifyAny(header http.Header, body []byte, secrets []string) bool {
	ok := false
	for _, secret := range secrets {
		if verify(header, body, secret) {
			ok = true
		}
	}
	return ok
}

// verify reports whether body carries a valid, fresh Slack signature.
func verify(header http.Header, body []byte, secret string) bool {
	if secret == "" {
		return false
	}
	sv, err := slack.NewSecretsVerifier(header, secret)
	if err != nil {
		return false
	}
	if _, err := sv.Write(body); err != nil {
		return false
	}
	return sv.Ensure() == nil
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, `{"error":{"code":"`+code+`","message":"`+message+`"}}`)
}

package mcpserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
	"time"
)

// SessionLifetime is how long an MCP session over HTTP lasts from its
// initialize: then the server answers 404 and the client opens another.
const SessionLifetime = 24 * time.Hour

// Session errors: ErrSessionUnknown is an id no key signed, or one past
// its lifetime (404: open another); ErrSessionOfAnotherAgent is an id
// signed for another agent (403).
var (
	ErrSessionUnknown        = errors.New("mcpserver: unknown or ended session")
	ErrSessionOfAnotherAgent = errors.New("mcpserver: the session was opened by another agent")
)

// SessionIDs issues and checks the Mcp-Session-Id of MCP over HTTP. An id
// holds everything a server needs to check it (the agent that opened the
// session, when, and an HMAC-SHA256 of both under a key every replica
// derives from the same secret), so no server keeps sessions: a session
// opened on one replica is served by any other, and after a restart, with
// nothing held per session in memory.
type SessionIDs struct {
	// keys check an id; the first signs.
	keys [][]byte
}

// sessionPrefix starts every session id; a new format takes a new one.
const sessionPrefix = "cs1."

// maxSessionID bounds an id read from a request, before any work.
const maxSessionID = 512

// NewSessionIDs derives the session keys from secrets, every replica's
// (the first signs; each checks, so a secret rotated in keeps sessions
// signed under the one before). Without a secret, the key is this
// process's alone: sessions then end with it.
func NewSessionIDs(secrets [][]byte) *SessionIDs {
	s := &SessionIDs{}
	for _, secret := range secrets {
		if len(secret) > 0 {
			s.keys = append(s.keys, deriveSessionKey(secret))
		}
	}
	if len(s.keys) == 0 {
		random := make([]byte, 32)
		_, _ = rand.Read(random) // crypto/rand.Read never fails (Go 1.24+)
		s.keys = append(s.keys, random)
	}
	return s
}

// deriveSessionKey keeps the session key apart from the secret's other
// uses: an id never reveals anything that signs a dispatch.
func deriveSessionKey(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("countersign mcp session id v1"))
	return mac.Sum(nil)
}

// Issue returns a new session id for agent, opened at now.
func (s *SessionIDs) Issue(agent string, now time.Time) string {
	payload := make([]byte, 16, 16+len(agent))
	binary.BigEndian.PutUint64(payload, uint64(now.Unix()))
	_, _ = rand.Read(payload[8:16]) // two sessions opened in one second differ
	payload = append(payload, agent...)
	enc := base64.RawURLEncoding
	return sessionPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(sign(s.keys[0], payload))
}

// Check reports whether id is a session of agent still open at now: nil,
// ErrSessionUnknown or ErrSessionOfAnotherAgent.
func (s *SessionIDs) Check(id, agent string, now time.Time) error {
	if len(id) > maxSessionID {
		return ErrSessionUnknown
	}
	body, ok := strings.CutPrefix(id, sessionPrefix)
	if !ok {
		return ErrSessionUnknown
	}
	encPayload, encMAC, ok := strings.Cut(body, ".")
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(encPayload)
	if !ok || err != nil || len(payload) < 16 {
		return ErrSessionUnknown
	}
	got, err := enc.DecodeString(encMAC)
	if err != nil {
		return ErrSessionUnknown
	}
	signed := false
	for _, key := range s.keys {
		if hmac.Equal(got, sign(key, payload)) {
			signed = true
		}
	}
	if !signed {
		return ErrSessionUnknown
	}
	if string(payload[16:]) != agent {
		return ErrSessionOfAnotherAgent
	}
	opened := time.Unix(int64(binary.BigEndian.Uint64(payload)), 0)
	// A minute of slack for replicas whose clocks differ.
	if now.Before(opened.Add(-time.Minute)) || !now.Before(opened.Add(SessionLifetime)) {
		return ErrSessionUnknown
	}
	return nil
}

func sign(key, payload []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write(payload)
	return mac.Sum(nil)
}

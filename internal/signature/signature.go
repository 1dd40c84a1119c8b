// Package signature is the gate's signature scheme, used on dispatches (with
// COUNTERSIGN_DISPATCH_SECRET) and on agent callbacks (with the callback's
// secret): "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>". The
// executor signs here and the Go client verifies here, so the two cannot
// drift apart. It imports the standard library only.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Header carries the gate's signature of a body it sends.
const Header = "Countersign-Signature"

// Sign returns the Countersign-Signature value for body sent at t:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>" (docs/ARCHITECTURE.md).
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrBadSignature is returned by Verify for any signature that does
// not prove the body came through the gate within the tolerance.
var ErrBadSignature = errors.New("bad countersign signature")

// Verify checks a Countersign-Signature header value, as a provider or an
// agent would: the HMAC must match in constant time and t must be within tolerance
// of now.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ErrBadSignature
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			b, err := hex.DecodeString(v)
			if err != nil {
				return ErrBadSignature
			}
			sigs = append(sigs, b)
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return ErrBadSignature
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrBadSignature
}

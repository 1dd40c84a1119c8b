// Package signature is the Countersign-Signature scheme, one for every
// request countersign signs: a dispatch to a provider (the tool's dispatch
// secret) and a callback to an agent (the agent's callback secret).
//
//	Countersign-Signature: t=<unix seconds>,v1=<hex>,v2=<hex>
//	v1 = HMAC-SHA256(secret, "<t>.<body>")
//	v2 = HMAC-SHA256(secret, "<t>\n<method>\n<path>\n<idempotency key>\n<delivery id>\n<body>")
//
// v1 covers the time and the body only, so a captured request can be sent
// again within the tolerance under another Idempotency-Key or to another
// path. v2 also covers how the request was sent (Request). Both are sent
// while receivers move to v2; docs/CALLBACKS.md is the contract, and
// testdata/vectors.json its examples. The secret's bytes are the configured
// string's UTF-8 bytes, exactly. It imports only the standard library.
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

// Header is the header that carries a signature.
const Header = "Countersign-Signature"

// Sign returns the header value for body sent as req at t: one v1 and one
// v2 per secret (several while a secret is rotated), in the order given.
func Sign(secrets [][]byte, t time.Time, req Request, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=" + ts)
	for _, s := range secrets {
		b.WriteString(",v1=" + hex.EncodeToString(macV1(s, ts, body)))
	}
	for _, s := range secrets {
		b.WriteString(",v2=" + hex.EncodeToString(macV2(s, ts, req, body)))
	}
	return b.String()
}

// SignedV1 is the string v1 signs: "<t>.<body>".
func SignedV1(ts string, body []byte) []byte {
	return append([]byte(ts+"."), body...)
}

// SignedV2 is the string v2 signs: the time, the method, the path, the
// Idempotency-Key and the delivery id, each ended by a newline, then the
// body. None of the first five can hold a newline (a header cannot), so the
// string splits one way only.
func SignedV2(ts string, req Request, body []byte) []byte {
	head := strings.Join([]string{ts, req.Method, req.Path, req.IdempotencyKey, req.Delivery}, "\n") + "\n"
	return append([]byte(head), body...)
}

func macV1(secret []byte, ts string, body []byte) []byte {
	return mac(secret, SignedV1(ts, body))
}

func macV2(secret []byte, ts string, req Request, body []byte) []byte {
	return mac(secret, SignedV2(ts, req, body))
}

func mac(secret, msg []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(msg)
	return m.Sum(nil)
}

// ErrBad is returned by Verify and VerifyRequest for any signature that does
// not prove what it covers was signed with the secret within the tolerance.
var ErrBad = errors.New("bad countersign signature")

// Verify checks a header's v1 as a receiver would: one v1 must match the
// body, compared in constant time, and t must be within tolerance of now.
// It does not look at v2; VerifyRequest does, and is what a receiver that
// knows how the request was sent should call.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	h, err := parse(header, now, tolerance)
	if err != nil {
		return err
	}
	return matchAny(h.v1, macV1(secret, h.ts, body))
}

// VerifyRequest checks a header's v2: one v2 must match req and the body,
// compared in constant time, and t must be within tolerance of now. A
// header without a matching v2 is refused even when its v1 matches: v1
// alone would accept the body sent again under another key or path.
func VerifyRequest(secret []byte, header string, req Request, body []byte, now time.Time, tolerance time.Duration) error {
	if !req.valid() {
		return ErrBad
	}
	h, err := parse(header, now, tolerance)
	if err != nil {
		return err
	}
	return matchAny(h.v2, macV2(secret, h.ts, req, body))
}

// parsed is a header's time and its signatures by scheme.
type parsed struct {
	ts     string
	v1, v2 [][]byte
}

// parse reads "t=…,v1=…,v2=…": comma-separated key=value parts, spaces and
// tabs around a part ignored; exactly one t, decimal digits, within
// tolerance of now; v1 and v2 values that are not 64 lowercase hex digits
// match nothing; other keys are ignored, for schemes to come.
func parse(header string, now time.Time, tolerance time.Duration) (parsed, error) {
	var h parsed
	seenT := false
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.Trim(part, " \t"), "=")
		if !ok {
			return parsed{}, ErrBad
		}
		switch k {
		case "t":
			if seenT {
				return parsed{}, ErrBad
			}
			seenT, h.ts = true, v
		case "v1", "v2":
			b, ok := decodeMAC(v)
			if !ok {
				continue
			}
			if k == "v1" {
				h.v1 = append(h.v1, b)
			} else {
				h.v2 = append(h.v2, b)
			}
		}
	}
	if !seenT || !digits(h.ts) {
		return parsed{}, ErrBad
	}
	unix, err := strconv.ParseInt(h.ts, 10, 64)
	if err != nil {
		return parsed{}, ErrBad
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return parsed{}, ErrBad
	}
	return h, nil
}

// decodeMAC decodes a signature value written as countersign writes it: 64
// lowercase hex digits.
func decodeMAC(v string) ([]byte, bool) {
	if len(v) != 2*sha256.Size {
		return nil, false
	}
	for i := range len(v) {
		if c := v[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(v)
	return b, err == nil
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func matchAny(sigs [][]byte, want []byte) error {
	ok := false
	for _, s := range sigs {
		// Every value is compared, so the time taken says nothing of which
		// matched.
		if hmac.Equal(s, want) {
			ok = true
		}
	}
	if !ok {
		return ErrBad
	}
	return nil
}

package emailsurface

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// link is what a link's token binds.
type link struct {
	RequestID   string
	Round       int
	PayloadHash string
	Verdict     store.Verdict
	Approver    []byte // addressTag of the approver's address
	Expires     time.Time
}

// tokenPrefix starts every token; a new format takes a new one.
const tokenPrefix = "e1."

// maxToken bounds a token read from a request, before any work.
const maxToken = 1024

// Link errors: a token no key signed (or not a token at all), and one past
// its expiry.
var (
	errBadLink     = errors.New("this link is not valid: it was changed, or not made by this countersign")
	errExpiredLink = errors.New("this link has expired")
)

// keys sign and check tokens: the first signs, each checks, so a secret
// rotated in keeps the links signed under the one before.
type keys [][]byte

// newKeys derives the link keys from secrets; without one, the key is this
// process's alone and links die with it.
func newKeys(secrets [][]byte) keys {
	var k keys
	for _, s := range secrets {
		if len(s) > 0 {
			mac := hmac.New(sha256.New, s)
			mac.Write([]byte("countersign email link v1")) // apart from the secret's other uses
			k = append(k, mac.Sum(nil))
		}
	}
	if len(k) == 0 {
		random := make([]byte, 32)
		_, _ = rand.Read(random)
		k = append(k, random)
	}
	return k
}

// addressTag stands for an approver's address in a token: an HMAC of it,
// case folded, so the link does not tell a reader whom it is for.
func (k keys) addressTag(key []byte, address string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("address\x00"))
	mac.Write([]byte(strings.ToLower(strings.TrimSpace(address))))
	return mac.Sum(nil)[:16]
}

// issue returns the token of a link for address.
func (k keys) issue(l link, address string) string {
	l.Approver = k.addressTag(k[0], address)
	payload := strings.Join([]string{l.RequestID, strconv.Itoa(l.Round), l.PayloadHash, string(l.Verdict),
		base64.RawURLEncoding.EncodeToString(l.Approver), strconv.FormatInt(l.Expires.Unix(), 10)}, "\n")
	enc := base64.RawURLEncoding
	return tokenPrefix + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(sign(k[0], []byte(payload)))
}

func sign(key, payload []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("link\x00"))
	mac.Write(payload)
	return mac.Sum(nil)
}

// check reads token: the link, and the key that signed it (to tag a typed
// address with). An expired link is returned with errExpiredLink.
func (k keys) check(token string, now time.Time) (link, []byte, error) {
	if len(token) > maxToken || !strings.HasPrefix(token, tokenPrefix) {
		return link{}, nil, errBadLink
	}
	p, s, ok := strings.Cut(strings.TrimPrefix(token, tokenPrefix), ".")
	if !ok {
		return link{}, nil, errBadLink
	}
	enc := base64.RawURLEncoding.Strict() // one token per payload and signature
	payload, err1 := enc.DecodeString(p)
	sig, err2 := enc.DecodeString(s)
	if err1 != nil || err2 != nil {
		return link{}, nil, errBadLink
	}
	var key []byte
	for _, candidate := range k {
		if hmac.Equal(sig, sign(candidate, payload)) {
			key = candidate
			break
		}
	}
	if key == nil {
		return link{}, nil, errBadLink
	}
	f := strings.Split(string(payload), "\n")
	if len(f) != 6 {
		return link{}, nil, errBadLink
	}
	round, err1 := strconv.Atoi(f[1])
	tag, err2 := enc.DecodeString(f[4])
	exp, err3 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return link{}, nil, errBadLink
	}
	l := link{RequestID: f[0], Round: round, PayloadHash: f[2], Verdict: store.Verdict(f[3]), Approver: tag, Expires: time.Unix(exp, 0)}
	if l.Verdict != store.VerdictApprove && l.Verdict != store.VerdictReject {
		return link{}, nil, errBadLink
	}
	if !now.Before(l.Expires) {
		return l, key, errExpiredLink
	}
	return l, key, nil
}

// matches reports whether address is the one l was issued for.
func (k keys) matches(l link, key []byte, address string) bool {
	return hmac.Equal(l.Approver, k.addressTag(key, address))
}

package intentkey

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// A client key is a key an agent sends instead of the derived one (the
// Idempotency-Key header or the idempotency_key field). countersign stores it
// as sent and the executor sends it to the provider as a header, so it must
// reach the provider as the same string: HTTP servers trim a header value's
// surrounding whitespace (RFC 9110, section 5.5), and some fold or drop other
// characters. A key " wa_…" would then become, at the provider, the key
// another agent's intent derives, and that agent's write would be answered
// with this one's object. Letters, digits and -_.:~/+= pass headers, URL
// templates and logs unchanged, so a client key is made of them only.
const (
	// ClientKeyMin and ClientKeyMax bound a client key's length.
	ClientKeyMin = 8
	ClientKeyMax = 255
	// ClientKeyPunctuation is what a client key may hold besides ASCII
	// letters and digits.
	ClientKeyPunctuation = "-_.:~/+="
	// ClientKeyPattern is the alphabet and the length as a regular
	// expression (ECMA-262 and RE2 alike), for the API's documents. The
	// prefix rule is not in it: it needs the derived key.
	ClientKeyPattern = `^[A-Za-z0-9._~:/+=-]{8,255}$`
)

// ClientKeyError says why a client key is refused, in a sentence that names
// the Idempotency-Key; it is the same words in every surface.
type ClientKeyError struct {
	Reason string
}

func (e *ClientKeyError) Error() string { return e.Reason }

// clientKeyRule is the rule in words, the start of every refusal of the form.
const clientKeyRule = "the Idempotency-Key (header or idempotency_key) must be 8 to 255 characters, each a letter, a digit or one of " + ClientKeyPunctuation

// CheckClientKeyForm returns a *ClientKeyError unless key is 8 to 255
// characters of ASCII letters, digits and -_.:~/+=. It is the part of
// CheckClientKey that does not need the derived key, for a surface that
// reads the key before it knows the intent's.
func CheckClientKeyForm(key string) error {
	if n := len(key); n < ClientKeyMin || n > ClientKeyMax {
		return &ClientKeyError{Reason: fmt.Sprintf("%s; this one has %d", clientKeyRule, utf8.RuneCountInString(key))}
	}
	for i := 0; i < len(key); i++ {
		if !clientKeyByte(key[i]) {
			// Every byte before i is ASCII, so i+1 counts characters.
			r, _ := utf8.DecodeRuneInString(key[i:])
			return &ClientKeyError{Reason: fmt.Sprintf("%s; character %d (%U) is not", clientKeyRule, i+1, r)}
		}
	}
	return nil
}

// CheckClientKey returns a *ClientKeyError unless key may be the client key
// of an intent whose derived key is derived: it passes CheckClientKeyForm,
// and when it begins with the derived keys' prefix in any letter case (wa_,
// WA_, Wa_) it is exactly derived. The prefix is what tells a derived key on
// a card, in a lookup and at the provider; a client key must not pass for
// one, nor differ from one only in case at a provider that folds it.
func CheckClientKey(key, derived string) error {
	if err := CheckClientKeyForm(key); err != nil {
		return err
	}
	if HasPrefixFold(key) && key != derived {
		return &ClientKeyError{Reason: "an Idempotency-Key (header or idempotency_key) that begins with " + Prefix +
			", in any letter case, must be the key this intent derives; send that key, none, or a key without the prefix"}
	}
	return nil
}

// ValidClientKey reports whether key passes CheckClientKeyForm.
func ValidClientKey(key string) bool { return CheckClientKeyForm(key) == nil }

// HasPrefixFold reports whether key begins with Prefix in any letter case.
func HasPrefixFold(key string) bool {
	return len(key) >= len(Prefix) && strings.EqualFold(key[:len(Prefix)], Prefix)
}

func clientKeyByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte(ClientKeyPunctuation, c) >= 0
}

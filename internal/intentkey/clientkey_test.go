package intentkey

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/intentkey/intentkeytest"
)

// The published vector's derived key, the intent the cases below are sent with.
const derived = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c"

func TestCheckClientKey(t *testing.T) {
	t.Parallel()
	hex := strings.TrimPrefix(derived, Prefix)
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"8 characters", "abcdefgh", true},
		{"7 characters", "abcdefg", false},
		{"255 characters", strings.Repeat("k", 255), true},
		{"256 characters", strings.Repeat("k", 256), false},
		{"a leading space", " dispatch-0001", false},
		{"a trailing space", "dispatch-0001 ", false},
		{"a leading space before a derived key", " " + derived, false},
		{"a trailing space after a derived key", derived + " ", false},
		{"a space inside", "order-1234 retry", false},
		{"a tab", "tab\there-123", false},
		{"a trailing tab", "dispatch-0001\t", false},
		{"a line feed", "dispatch-0001\n", false},
		{"U+0000", "key-\x00-0001", false},
		{"DEL", "key-\x7f-0001", false},
		{"a byte that is not UTF-8", "key-\xff-0001", false},
		{"Cyrillic", "ключ-12345", false},
		{"a no-break space", "\u00a0dispatch-0001", false},
		{"the derived key", derived, true},
		{"wa_ not derived", Prefix + strings.Repeat("0", 64), false},
		{"wa_ short", "wa_imitation", false},
		{"WA_ and the derived hex", "WA_" + hex, false},
		{"Wa_ and the derived hex", "Wa_" + hex, false},
		{"wA_ and the derived hex", "wA_" + hex, false},
		{"the derived key in capitals", strings.ToUpper(derived), false},
		{"wa_ later in the key", "order-wa_0001", true},
		{"wa- is not the prefix", "wa-0001-0002", true},
		{"letters and digits", "AZaz0123456789", true},
	} {
		err := CheckClientKey(tc.key, derived)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckClientKey(%q) = %v, want ok %v", tc.name, tc.key, err, tc.ok)
		}
		var keyErr *ClientKeyError
		if err != nil && (!errors.As(err, &keyErr) || !strings.Contains(err.Error(), "Idempotency-Key")) {
			t.Errorf("%s: the refusal %v is not a *ClientKeyError naming the Idempotency-Key", tc.name, err)
		}
	}
	// Each allowed punctuation mark, alone among letters and digits.
	for _, c := range ClientKeyPunctuation {
		key := "dispatch" + string(c) + "0001"
		if err := CheckClientKey(key, derived); err != nil {
			t.Errorf("%q: %v", key, err)
		}
	}
	// Every other printable ASCII character is refused.
	for c := byte(0x20); c < 0x7f; c++ {
		if clientKeyByte(c) {
			continue
		}
		key := "dispatch" + string(c) + "0001"
		if err := CheckClientKey(key, derived); err == nil {
			t.Errorf("%q was accepted", key)
		}
	}
}

// A refusal says which character is at fault, and how long a key of the
// wrong length is.
func TestClientKeyRefusalsSayWhy(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		" " + derived:  "character 1 (U+0020) is not",
		"ab\tcdefgh":   "character 3 (U+0009) is not",
		"ключ-12345":   "character 1 (U+043A) is not",
		"abcdefg":      "this one has 7",
		"WA_" + "0000": "this one has 7",
		"WA_00000000":  "begins with wa_, in any letter case, must be the key this intent derives",
	} {
		if err := CheckClientKey(key, derived); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckClientKey(%q) = %v, want it to say %q", key, err, want)
		}
	}
}

// The form alone does not need the derived key: a wa_ key passes it, and
// CheckClientKey then decides.
func TestCheckClientKeyForm(t *testing.T) {
	t.Parallel()
	if err := CheckClientKeyForm("WA_00000000"); err != nil {
		t.Errorf("the form refused a well-formed WA_ key: %v", err)
	}
	if err := CheckClientKeyForm(" " + derived); err == nil {
		t.Error("the form took a leading space")
	}
	if !ValidClientKey("dispatch-0001") || ValidClientKey("dispatch 0001") {
		t.Error("ValidClientKey disagrees with the form")
	}
}

// Every client key of the shared vectors is taken or refused as listed.
func TestClientKeyVectors(t *testing.T) {
	t.Parallel()
	v := intentkeytest.Load(t).ClientKeys
	if v.Derived != derived {
		t.Fatalf("the vectors' derived key is %s, want the published vector's", v.Derived)
	}
	for _, k := range v.Accepted {
		if err := CheckClientKey(k.Key, v.Derived); err != nil {
			t.Errorf("%s: %q refused: %v", k.Name, k.Key, err)
		}
	}
	for _, k := range v.Refused {
		if err := CheckClientKey(k.Key, v.Derived); err == nil {
			t.Errorf("%s: %q accepted", k.Name, k.Key)
		}
	}
}

package signature

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignatureRoundTrip(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"a":1}`)
	sig := Sign([]byte("s3cret"), now, body)
	if err := Verify([]byte("s3cret"), sig, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("valid signature refused: %v", err)
	}
	for name, bad := range map[string]func() error{
		"other body":   func() error { return Verify([]byte("s3cret"), sig, []byte(`{"a":2}`), now, 5*time.Minute) },
		"other secret": func() error { return Verify([]byte("other"), sig, body, now, 5*time.Minute) },
		"too old":      func() error { return Verify([]byte("s3cret"), sig, body, now.Add(time.Hour), 5*time.Minute) },
		"garbage":      func() error { return Verify([]byte("s3cret"), "t=x,v1=zz", body, now, 5*time.Minute) },
	} {
		if !errors.Is(bad(), ErrBad) {
			t.Errorf("%s: accepted", name)
		}
	}
	// The documented format: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
	if want := "t=1760000000,v1="; sig[:len(want)] != want {
		t.Fatalf("signature %q", sig)
	}
}

// FuzzVerify checks that no header but the one Sign made verifies.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_760_000_000, 0)
	body := []byte(`{"amount_cents":4200}`)
	f.Add(Sign([]byte("k"), now, body))
	f.Add("t=1760000000,v1=00")
	f.Add("v1=,t=")
	f.Add("t=1760000000,v1=zz,v1=" + Sign([]byte("k"), now, body)[len("t=1760000000,v1="):])
	f.Fuzz(func(t *testing.T, header string) {
		err := Verify([]byte("k"), header, body, now, 5*time.Minute)
		if err == nil && header != Sign([]byte("k"), now, body) {
			// Another header may still carry the right v1 (several v1 values are
			// allowed, for secret rotation); it must then contain it.
			want := Sign([]byte("k"), now, body)[len("t=1760000000,"):]
			if !strings.Contains(strings.ToLower(header), want[len("v1="):]) {
				t.Fatalf("header %q verified", header)
			}
		}
	})
}

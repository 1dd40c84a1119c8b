package approvals

import (
	"strings"
	"testing"
)

func TestCanonicalizeSnapshot(t *testing.T) {
	t.Parallel()
	got, err := Canonicalize([]byte(`{"b": 1.50, "a": "x\ny", "c": 1e3}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"x\ny","b":1.5,"c":1000}`; string(got) != want {
		t.Fatalf("Canonicalize = %s, want %s", got, want)
	}
	if h := PayloadHash(got); !strings.HasPrefix(h, "sha256:") || len(h) != 7+64 {
		t.Fatalf("PayloadHash = %s", h)
	}
}

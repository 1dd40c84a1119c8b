package lookup

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/store"
)

// Parse never panics and never sends a short prefix or an oversize id to
// the database.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "help", "pending", "UNKNOWN", "wa_3fa9c2d1", "3fa9c2d1", "inv_8841",
		"wa_d0290121a…634c", "wa_d0290121a...634c", "wa_12", "`wa_3fa9c2d1e`", "two words",
		"0b8f7c1e-3d1a-4c62-9d1e-5b0b6f3b7a10", "wa_\x00\x01\x02\x03\x04\x05\x06\x07"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q := Parse(text)
		switch q.Kind {
		case QueryKey:
			if !strings.HasPrefix(q.Value, "wa_") || len(q.Value) < 3+minPrefix || !printableASCII(q.Value) {
				t.Fatalf("key query %q from %q", q.Value, text)
			}
		case QueryHexPrefix:
			if len(q.Value) < minPrefix || !isHex(q.Value) {
				t.Fatalf("hex query %q from %q", q.Value, text)
			}
		case QueryBusiness:
			if q.Value == "" || len(q.Value) > maxBusinessID {
				t.Fatalf("business query %q from %q", q.Value, text)
			}
		case QueryID:
			if !store.IsUUID(q.Value) {
				t.Fatalf("id query %q from %q", q.Value, text)
			}
		case QueryHelp, QueryPending, QueryUnknown:
		default:
			t.Fatalf("unknown kind %q", q.Kind)
		}
		if utf8.ValidString(text) && q.Kind == QueryBusiness && !utf8.ValidString(q.Value) {
			t.Fatalf("business id %q is not valid UTF-8", q.Value)
		}
	})
}

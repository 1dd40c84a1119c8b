package identity_test

import (
	"strings"
	"testing"
	"unicode"

	"github.com/countersign/countersign/identity"
)

// FuzzParse holds the parser to its promises on any input: an id it reads
// prints back to itself (reading the printed form gives the same id), is
// one word of printable ASCII no longer than MaxLen, and is a person or a
// group, never both.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"U024BE7LH", "slack:U1", "S0FIN", "slack:S0FIN", "local:reviewer", "local:",
		"teams:2F1C3A4B-5D6E-4F70-8A9B-0C1D2E3F4A5B", "email:ana@example.com", "email:a@b@c", "oidc:auth0|5f7c",
		"<@U1>", "u1", "slack:local:x", "local:é", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := identity.Parse(s)
		person, perr := identity.ParsePerson(s)
		if err != nil {
			if perr == nil {
				t.Fatalf("ParsePerson(%q) = %+v, but Parse refused it: %v", s, person, err)
			}
			return
		}
		if (perr == nil) == id.IsGroup() {
			t.Fatalf("%q: group %v, ParsePerson error %v", s, id.IsGroup(), perr)
		}
		if perr == nil && person != id {
			t.Fatalf("%q: ParsePerson %+v, Parse %+v", s, person, id)
		}
		printed := id.String()
		again, err := identity.Parse(printed)
		if err != nil || again != id || again.String() != printed {
			t.Fatalf("%q printed %q, read back as %+v, %v", s, printed, again, err)
		}
		if len(printed) > identity.MaxLen || printed == "" || strings.IndexFunc(printed, func(r rune) bool {
			return r > unicode.MaxASCII || !unicode.IsGraphic(r) || unicode.IsSpace(r)
		}) >= 0 {
			t.Fatalf("%q printed %q", s, printed)
		}
		if !id.Same(again) || !identity.SamePerson(s, printed) {
			t.Fatalf("%q is not the same person as its printed form %q", s, printed)
		}
	})
}

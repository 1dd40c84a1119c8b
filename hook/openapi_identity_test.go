package hook

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/countersign/countersign/identity"
)

// The document states requested_for's rule as package identity writes it:
// the same pattern and length, and the examples identity's tests read
// (identity/testdata/ids.json) are accepted and refused by the document's
// pattern exactly as by identity.ParsePerson.
func TestOpenAPIRequestedForIsIdentitysPerson(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas struct {
				Intent struct {
					Properties struct {
						RequestedFor struct {
							Pattern   string `json:"pattern"`
							MaxLength int    `json:"maxLength"`
						} `json:"requested_for"`
					} `json:"properties"`
				} `json:"Intent"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	rf := doc.Components.Schemas.Intent.Properties.RequestedFor
	if rf.Pattern != identity.PersonPattern {
		t.Errorf("requested_for's pattern is\n%s\nidentity.PersonPattern is\n%s", rf.Pattern, identity.PersonPattern)
	}
	if rf.MaxLength != identity.MaxLen {
		t.Errorf("requested_for's maxLength is %d, identity.MaxLen %d", rf.MaxLength, identity.MaxLen)
	}
	pattern, err := regexp.Compile(rf.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("../identity/testdata/ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex struct{ Persons, Groups, Invalid []string }
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, list := range [][]string{ex.Persons, ex.Groups, ex.Invalid} {
		for _, s := range list {
			_, err := identity.ParsePerson(s)
			if doc, pkg := pattern.MatchString(s), err == nil; doc != pkg {
				t.Errorf("%q: the document's pattern says %v, identity.ParsePerson %v", s, doc, pkg)
			}
			n++
		}
	}
	if len(ex.Persons) == 0 || len(ex.Invalid) == 0 {
		t.Fatalf("read %d examples, without persons or invalid ones", n)
	}
}

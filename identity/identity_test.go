package identity_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/identity"
)

// examples are the ids of testdata/ids.json, which the OpenAPI document's
// test reads too.
type examples struct {
	Persons []string `json:"persons"`
	Groups  []string `json:"groups"`
	Invalid []string `json:"invalid"`
}

func readExamples(t *testing.T) examples {
	t.Helper()
	raw, err := os.ReadFile("testdata/ids.json")
	if err != nil {
		t.Fatal(err)
	}
	var ex examples
	if err := json.Unmarshal(raw, &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Persons) == 0 || len(ex.Groups) == 0 || len(ex.Invalid) == 0 {
		t.Fatalf("testdata/ids.json lacks a list: %+v", ex)
	}
	return ex
}

// Every example is read as its list says: a person by both parsers, a
// group by Parse only, an invalid id by neither, and the patterns say the
// same as the parsers.
func TestExamples(t *testing.T) {
	t.Parallel()
	ex := readExamples(t)
	person, any := regexp.MustCompile(identity.PersonPattern), regexp.MustCompile(identity.Pattern)
	for _, s := range ex.Persons {
		if _, err := identity.ParsePerson(s); err != nil {
			t.Errorf("ParsePerson(%q): %v", s, err)
		}
		if _, err := identity.Parse(s); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
		if !person.MatchString(s) || !any.MatchString(s) {
			t.Errorf("the patterns refuse the person %q", s)
		}
	}
	for _, s := range ex.Groups {
		id, err := identity.Parse(s)
		if err != nil || !id.IsGroup() {
			t.Errorf("Parse(%q) = %+v, %v: want a group", s, id, err)
		}
		var perr *identity.Error
		if _, err := identity.ParsePerson(s); !errors.As(err, &perr) || !perr.Person {
			t.Errorf("ParsePerson(%q) = %v, want a refusal asking for a person", s, err)
		}
		if person.MatchString(s) || !any.MatchString(s) {
			t.Errorf("the patterns disagree on the group %q", s)
		}
	}
	for _, s := range ex.Invalid {
		if id, err := identity.Parse(s); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", s, id)
		}
		if id, err := identity.ParsePerson(s); err == nil {
			t.Errorf("ParsePerson(%q) = %+v, want an error", s, id)
		}
		if person.MatchString(s) || any.MatchString(s) {
			t.Errorf("the patterns accept %q", s)
		}
	}
}

// A Slack id prints bare, with or without its scheme as read; the others
// print with theirs, an object id in lower case.
func TestString(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"U024BE7LH":       "U024BE7LH",
		"slack:U024BE7LH": "U024BE7LH",
		"slack:S0FIN":     "S0FIN",
		"local:Alice":     "local:Alice",
		"teams:2F1C3A4B-5D6E-4F70-8A9B-0C1D2E3F4A5B": "teams:2f1c3a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b",
		"email:ana@example.com":                      "email:ana@example.com",
		"oidc:248289761001":                          "oidc:248289761001",
	} {
		got, err := identity.Canonical(in)
		if err != nil || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := identity.Canonical("<@U1>"); err == nil {
		t.Error("Canonical accepted a mention")
	}
}

// An id longer than MaxLen is refused, whatever its scheme.
func TestMaxLen(t *testing.T) {
	t.Parallel()
	ok := "local:" + strings.Repeat("a", identity.MaxLen-len("local:"))
	if _, err := identity.ParsePerson(ok); err != nil {
		t.Errorf("an id of MaxLen: %v", err)
	}
	if _, err := identity.Parse(ok + "a"); err == nil {
		t.Error("an id over MaxLen was accepted")
	}
}

// Same is the rule that refuses the person a request is for: a local name
// and an address ignore case, a Slack id with or without its scheme is one
// id, and two schemes are never one person.
func TestSamePerson(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"U1", "U1", true},
		{"slack:U1", "U1", true},
		{"U1", "u1", false},
		{"U1", "W1", false},
		{"local:Alice", "local:alice", true},
		{"local:alice", "U1", false},
		{"email:Ana@Example.com", "email:ana@example.com", true},
		{"oidc:Sub", "oidc:sub", false},
		{"teams:2F1C3A4B-5D6E-4F70-8A9B-0C1D2E3F4A5B", "teams:2f1c3a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b", true},
		{"email:ana@example.com", "oidc:ana@example.com", false},
		{"not an id", "not an id", true},
		{"not an id", "U1", false},
	} {
		if got := identity.SamePerson(c.a, c.b); got != c.same {
			t.Errorf("SamePerson(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
		if got := identity.SamePerson(c.b, c.a); got != c.same {
			t.Errorf("SamePerson(%q, %q) = %v, want %v", c.b, c.a, got, c.same)
		}
	}
}

// The refusal names the forms an operator or an agent may write.
func TestErrorNamesTheForms(t *testing.T) {
	t.Parallel()
	_, err := identity.Parse("bob")
	if err == nil || !strings.Contains(err.Error(), `"bob" is not `+identity.Forms) {
		t.Errorf("Parse: %v", err)
	}
	_, err = identity.ParsePerson("S0FIN")
	if err == nil || !strings.Contains(err.Error(), `"S0FIN" is not `+identity.PersonForms) {
		t.Errorf("ParsePerson: %v", err)
	}
}

// An OpenID Connect group is oidc:group:<name>; any other oidc: id, and the
// prefix alone, names a person.
func TestOIDCGroupIsAGroup(t *testing.T) {
	for s, want := range map[string]bool{
		"oidc:group:finance":        true,
		"oidc:alice@example.com":    false,
		"oidc:group:":               false,
		"oidc:248289761001":         false,
		"S0FINANCE":                 true,
		"local:group:finance":       false,
		"email:group:x@example.com": false,
	} {
		id, err := identity.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q): %v", s, err)
		}
		if id.IsGroup() != want {
			t.Errorf("%q: IsGroup() = %v, want %v", s, id.IsGroup(), want)
		}
	}
}

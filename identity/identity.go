package identity

import (
	"fmt"
	"regexp"
	"strings"
)

// Scheme is the system that vouches for an id.
type Scheme string

// The schemes; an id's scheme is printed before a colon ("local:ana"),
// except Slack's (see ID.String).
const (
	Slack Scheme = "slack"
	Local Scheme = "local"
	Teams Scheme = "teams"
	Email Scheme = "email"
	OIDC  Scheme = "oidc"
)

// MaxLen is the longest an id may be, as printed.
const MaxLen = 255

// ID is one person or, for Slack, one user group.
type ID struct {
	Scheme Scheme
	// Value is the id within its scheme: U024BE7LH, reviewer, ana@example.com.
	Value string
}

// The grammar of each scheme's value. Printable ASCII without a space
// ([!-~]) is what may follow local: and oidc:, so that an id is one word in
// a log line and a Slack message, and no look-alike character passes for
// another person's id.
const (
	slackUser  = `[UW][A-Z0-9]+`
	slackGroup = `S[A-Z0-9]+`
	anyValue   = `[!-~]+`
	objectID   = `[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`
	// An address: one @ between two non-empty parts, no space.
	address = `[!-?A-~]+@[!-?A-~]+`
)

// PersonPattern matches an id that names one person (every scheme, and no
// user group), as the API takes requested_for: the OpenAPI document states
// it as it is written here.
const PersonPattern = `^(?:(?:slack:)?` + slackUser + `|local:` + anyValue + `|teams:` + objectID +
	`|email:` + address + `|oidc:` + anyValue + `)$`

// Pattern matches any id: a person (PersonPattern) or a Slack user group.
const Pattern = `^(?:(?:slack:)?(?:` + slackUser + `|` + slackGroup + `)|local:` + anyValue + `|teams:` + objectID +
	`|email:` + address + `|oidc:` + anyValue + `)$`

// PersonForms and Forms say in words what PersonPattern and Pattern accept,
// for the sentences that refuse an id.
const (
	PersonForms = "a Slack user id as Slack writes it (U… or W…, upper case, not a mention; or slack:U…), " +
		"a local reviewer (local:name), teams:<object id>, email:<address> or oidc:<subject>"
	Forms = "a Slack user id (U…, W…), a Slack user-group id (S…), a local reviewer (local:name), " +
		"teams:<object id>, email:<address> or oidc:<subject>"
)

var (
	personRE = regexp.MustCompile(PersonPattern)
	anyRE    = regexp.MustCompile(Pattern)
)

// Error says why a string is not an id.
type Error struct {
	Input  string
	Person bool // a person was asked for, so a user group is refused too
}

func (e *Error) Error() string {
	forms := Forms
	if e.Person {
		forms = PersonForms
	}
	return fmt.Sprintf("%q is not %s", e.Input, forms)
}

// Parse reads an id: a person or a Slack user group, with its scheme or,
// for Slack, bare.
func Parse(s string) (ID, error) {
	if len(s) > MaxLen || !anyRE.MatchString(s) {
		return ID{}, &Error{Input: s}
	}
	return split(s), nil
}

// ParsePerson reads an id that names one person: Parse, refusing a user
// group.
func ParsePerson(s string) (ID, error) {
	if len(s) > MaxLen || !personRE.MatchString(s) {
		return ID{}, &Error{Input: s, Person: true}
	}
	return split(s), nil
}

// split cuts an id the patterns accepted into its scheme and value.
func split(s string) ID {
	scheme, value, ok := strings.Cut(s, ":")
	if !ok {
		return ID{Scheme: Slack, Value: s}
	}
	if Scheme(scheme) == Teams {
		value = strings.ToLower(value) // an object id's hex digits, written as Graph writes them
	}
	return ID{Scheme: Scheme(scheme), Value: value}
}

// String prints the id as the API, the audit and the store keep it: a
// Slack id bare (U024BE7LH), any other with its scheme (local:ana).
func (id ID) String() string {
	if id.Scheme == Slack {
		return id.Value
	}
	return string(id.Scheme) + ":" + id.Value
}

// OIDCGroupPrefix begins the value of an OpenID Connect group's id:
// oidc:group:finance names the IdP group "finance" (docs/CONSOLE.md).
const OIDCGroupPrefix = "group:"

// IsGroup reports whether the id names a user group rather than a person:
// a Slack user group (S…) or an OpenID Connect group (oidc:group:<name>).
// A group's members are a surface's to list (approvals.GroupResolver).
func (id ID) IsGroup() bool {
	switch id.Scheme {
	case Slack:
		return strings.HasPrefix(id.Value, "S")
	case OIDC:
		return strings.HasPrefix(id.Value, OIDCGroupPrefix) && len(id.Value) > len(OIDCGroupPrefix)
	}
	return false
}

// Same reports whether two ids may be the same person, for the rules that
// refuse someone (the person a request is for may not approve it): a
// local reviewer's name and an email address ignore case, since both are
// typed by hand and local:Alice is local:alice; a Slack id, an object id
// and an OIDC subject are compared exactly.
func (id ID) Same(other ID) bool {
	if id.Scheme != other.Scheme {
		return false
	}
	switch id.Scheme {
	case Local, Email:
		return strings.EqualFold(id.Value, other.Value)
	}
	return id.Value == other.Value
}

// Canonical is s as String prints it, for a configured list compared with
// the ids surfaces report (slack:U1 is U1); s must be a valid id.
func Canonical(s string) (string, error) {
	id, err := Parse(s)
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// SamePerson is Same on two printed ids; ids that do not parse are the
// same person only when they are equal.
func SamePerson(a, b string) bool {
	x, errA := Parse(a)
	y, errB := Parse(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return x.Same(y)
}

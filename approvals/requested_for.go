package approvals

import "github.com/countersign/countersign/identity"

// requestedFor reads who a request is made for: empty (nobody in
// particular), or one person as identity.ParsePerson reads them, printed
// as the store keeps a decider (slack:U1 is U1). Anything else is refused
// at intake: the person a request is for may not approve it, and that rule
// compares ids, so a spelling the clicker's id never matches (u0req,
// <@U0REQ>, a user group) would let them.
func requestedFor(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	id, err := identity.ParsePerson(s)
	if err != nil {
		return "", invalid("requested_for", "requested_for must be %s", identity.PersonForms)
	}
	return id.String(), nil
}

// samePerson reports whether a clicker is the person id names
// (identity.ID.Same: a local reviewer's name ignores case, since the
// inbox's reviewer is configured by hand and local:Alice is local:alice).
func samePerson(id, user string) bool { return identity.SamePerson(id, user) }

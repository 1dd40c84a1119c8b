package approvals

import (
	"regexp"
	"strings"
)

// requestedFor is who a request may be made for: a Slack user id exactly as
// Slack sends it with a click (U… or W…), or a local reviewer as the inbox
// names them (local:name). Anything else is refused at intake: the person a
// request is for may not approve it, and that rule compares ids exactly, so
// a spelling the clicker's id never equals (u0req, <@U0REQ>) would let them.
var requestedFor = regexp.MustCompile(`^(?:[UW][A-Z0-9]+|local:[!-~]+)$`)

// checkRequestedFor refuses a requested_for that names nobody a surface
// would recognise; empty means nobody in particular.
func checkRequestedFor(id string) error {
	if id == "" || requestedFor.MatchString(id) {
		return nil
	}
	return invalid("requested_for", "requested_for must be a Slack user id as Slack writes it (U… or W…: upper case, no mention) or a local reviewer (local:name)")
}

// samePerson reports whether a clicker is the person id names. Slack ids
// are compared exactly; a local reviewer's name ignores case, since the
// inbox's reviewer is configured by hand and local:Alice is local:alice.
func samePerson(id, user string) bool {
	if strings.HasPrefix(id, localPrefix) && strings.HasPrefix(user, localPrefix) {
		return strings.EqualFold(id, user)
	}
	return id == user
}

// localPrefix marks the local review inbox's reviewers.
const localPrefix = "local:"

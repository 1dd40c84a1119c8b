// Package approvals turns agents' intended writes into stored requests and
// records reviewers' decisions on them.
//
// Intake derives the request's key at the moment the intent arrives (Key) and
// stores it with an immutable canonical snapshot of the effect. The same key
// always names the same request; the same key with different effect fields is
// ErrKeyReused. Decide records the first verdict for a request round in one
// conditional write and returns the existing decision to every later caller.
//
// Every "no" is a Refusal: RefusalFor maps any error of the service to its
// stable code and one sentence, which the agent hook (package hook, which
// adds the HTTP status), Slack and the review inbox show as they are.
// Refused attempts by people are audited here, whichever surface they came
// from.
//
// The package knows no HTTP: the surfaces (hook, bot, inbox) call it, and
// TestDomainImportsNoHTTP keeps net/http out of it.
package approvals

// Package approvals turns agents' intended writes into stored requests and
// records reviewers' decisions on them.
//
// Intake derives the request's key at the moment the intent arrives (Key) and
// stores it with an immutable canonical snapshot of the effect. The same key
// always names the same request; the same key with different effect fields is
// ErrKeyReused. Decide records the first verdict for a request round in one
// conditional write and returns the existing decision to every later caller.
package approvals

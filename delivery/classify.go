package delivery

import (
	"errors"
	"time"

	"github.com/countersign/countersign/internal/outbound"
)

// Class is what an attempt's error means for the item.
type Class int

// Classes of a failed attempt.
const (
	// Transient: try again after a Backoff (a 5xx, a timeout, a lost
	// connection).
	Transient Class = iota
	// Permanent: no retry will change it (a channel that does not exist,
	// a request that is gone); the item fails now.
	Permanent
	// RateLimited: the far side asked for a pause; the item's lane waits
	// Failure.Delay, on every replica, and the item is tried after it.
	// The attempt certainly did not land.
	RateLimited
	// Postponed: the item cannot be sent yet (its card is not posted, its
	// lane is paused); it is put back for Failure.Delay and the attempt is
	// not counted.
	Postponed
)

// ReasonRateLimited is the reason an adapter gives a RateLimited failure,
// recorded on the item: its attempt certainly did not land.
const ReasonRateLimited = "rate limited"

// Failure is a classified error of one attempt.
type Failure struct {
	Class  Class
	Reason string        // why, in words safe to store and log
	Delay  time.Duration // RateLimited: the pause; Postponed: when to look again
	Code   int           // the far side's answer code when it gave one (an HTTP status)
	Err    error         // the error classified, when there was one
}

func (f *Failure) Error() string { return f.Reason }

func (f *Failure) Unwrap() error { return f.Err }

// Postpone is an error that puts an item back for d without counting an
// attempt.
func Postpone(d time.Duration, reason string) error {
	return &Failure{Class: Postponed, Delay: d, Reason: reason}
}

// Permanently marks err as one no retry will change.
func Permanently(err error) error {
	return &Failure{Class: Permanent, Reason: outbound.Describe(err), Err: err}
}

// Classify reads err as a Failure: one already classified (a *Failure in
// its chain) as it is, any other as Transient. The reason is
// outbound.Describe's, so a configured URL's words stay out of the rows
// and the logs.
func Classify(err error) *Failure {
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	return &Failure{Class: Transient, Reason: outbound.Describe(err), Err: err}
}

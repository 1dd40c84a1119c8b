package delivery

import "time"

// Result is what an attempt came to, as the Queue records it.
type Result int

// Results of an attempt.
const (
	Delivered Result = iota // Done.Note says what was found, when something was
	Retried                 // tried and to be tried again after Delay (Attempted says whether the far side was called)
	Failed                  // for good: Permanent, or out of attempts
)

// Done is a delivery that needs no further attempt.
type Done struct {
	Note string // what was found instead of sent ("card already posted"), or ""
	Code int    // the far side's answer code, when it gave one
}

// Outcome is one attempt's result, handed to Queue.Record.
type Outcome struct {
	Result Result
	Done   Done          // Delivered
	Fail   *Failure      // Retried, Failed: the classified error
	Delay  time.Duration // Retried: when to try again
	// Attempted: the far side was called (false for a postponement, which
	// gives the claim back and keeps the last real attempt's error).
	Attempted bool
	// GaveUp: failed because its attempts ran out, not for a permanent
	// reason.
	GaveUp bool
}

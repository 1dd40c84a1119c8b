package delivery

import (
	"math/rand/v2"
	"time"
)

// Backoff is the delay before a transient failure is tried again: Base
// doubled per failed attempt up to Max, drawn from the upper half of that
// so items that failed together spread out.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// Delay is the wait after the attempt-th attempt failed (attempt counts
// from 1).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Base
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d/2+1)
}

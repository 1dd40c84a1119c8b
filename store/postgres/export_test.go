package postgres

// Classify is what every primitive does to its errors: it marks an outage
// with store.ErrUnavailable.
func Classify(err error) error { return unavailable(err) }

// Checks returns how many times l has tried for, or checked, the sweep lock.
func (l *Leader) Checks() int64 { return l.checks.Load() }

// Query is the driver's statement of that name (queries.sql).
func Query(name string) string { return q.Get(name) }

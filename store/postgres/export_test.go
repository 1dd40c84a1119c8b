package postgres

// Classify is what every primitive does to its errors: it marks an outage
// with store.ErrUnavailable.
func Classify(err error) error { return unavailable(err) }

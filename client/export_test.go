package client

// Sentinels lists every code's sentinel, for the tests.
func Sentinels() []error {
	out := make([]error, 0, len(codes))
	for _, e := range codes {
		out = append(out, e)
	}
	return out
}

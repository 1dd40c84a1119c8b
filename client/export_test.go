package client

// Sentinels lists every code's sentinel, for the tests.
func Sentinels() []error {
	out := make([]error, 0, len(codes))
	for _, e := range codes {
		out = append(out, e)
	}
	return out
}

// The verifiers at a time of the test's choosing, for the signature vectors.
var (
	VerifyV1At = verifyV1At
	VerifyV2At = verifyV2At
)

//go:build !linux

package hook

// hangups notices parked connections whose client went away on Linux
// only; elsewhere a parked poll learns it when it is answered.
type hangups struct{}

func (*hangups) watch(*parkedPoll)  {}
func (*hangups) forget(*parkedPoll) {}

package store_test

import (
	"testing"

	"github.com/countersign/countersign/store"
)

func TestSettled(t *testing.T) {
	for _, c := range []struct {
		status store.RequestStatus
		exec   store.ExecState
		want   bool
	}{
		{store.RequestPending, "", false},
		{store.RequestPending, store.ExecSuperseded, false},
		{store.RequestRejected, "", true},
		{store.RequestExpired, "", true},
		{store.RequestCancelled, "", true},
		{store.RequestApproved, store.ExecReady, false},
		{store.RequestApproved, store.ExecClaimed, false},
		{store.RequestApproved, store.ExecUnknown, false},
		{store.RequestApproved, store.ExecNeedsReview, false},
		{store.RequestApproved, store.ExecSucceeded, true},
		{store.RequestApproved, store.ExecFailed, true},
	} {
		if got := store.Settled(c.status, c.exec); got != c.want {
			t.Errorf("Settled(%s, %q) = %v, want %v", c.status, c.exec, got, c.want)
		}
	}
}

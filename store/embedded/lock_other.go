//go:build !unix

package embedded

import (
	"errors"
	"os"
)

const noFollow = 0

// flock has no portable counterpart here: a shared lock is not taken, and
// a restore, which must know that nothing has the ledger open, refuses.
func flock(_ *os.File, exclusive bool) error {
	if exclusive {
		return errors.New("restoring in place needs advisory file locks, which countersign takes on Unix only")
	}
	return nil
}

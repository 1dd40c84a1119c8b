package embedded

import (
	"errors"
	"fmt"
	"os"
)

// ErrInUse is returned by Restore while a process has the ledger open,
// and by Open while a restore replaces it.
var ErrInUse = errors.New("the ledger is in use")

// lockPath is the file whose advisory lock guards the ledger at path: every
// Open holds it shared until Close, a Restore exclusively. The kernel
// drops it with the process, so a crash leaves nothing to clean.
func lockPath(path string) string { return path + ".lock" }

// lockLedger takes the lock of the ledger at path, shared or exclusive,
// without waiting: ErrInUse when another holder excludes it.
func lockLedger(path string, exclusive bool) (*os.File, error) {
	f, err := os.OpenFile(lockPath(path), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := flock(f, exclusive); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

package store

import (
	"context"
	"errors"
	"fmt"
)

// MarkRestored records that this database was restored from a copy (see
// RestoreParams) in one durable transaction. Run before serve starts on the
// restored database: from then on the executor asks the provider before
// sending any execution the copy may have forgotten was sent.
func (l *Ledger) MarkRestored(ctx context.Context, p RestoreParams) (Restore, error) {
	if p.Window < 0 {
		return Restore{}, errors.New("marking the restore: the replay window is negative")
	}
	var r Restore
	err := l.inTx(ctx, func(ex Executor) (err error) {
		r, err = ex.MarkRestored(ctx, p)
		return err
	})
	if err != nil {
		return Restore{}, fmt.Errorf("marking the restore: %w", err)
	}
	return r, nil
}

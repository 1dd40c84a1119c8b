package embedded

import (
	"context"
	"time"
)

// OpenWithBusyTimeout is Open with another wait for a lock held elsewhere,
// so a test can outlive it.
func OpenWithBusyTimeout(ctx context.Context, path string, busyTimeout time.Duration) (*Driver, error) {
	return open(ctx, path, busyTimeout)
}

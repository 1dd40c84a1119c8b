//go:build unix

package embedded

import (
	"errors"
	"os"
	"syscall"
)

// noFollow refuses a symlink as the lock file.
const noFollow = syscall.O_NOFOLLOW

// flock locks f (flock(2): the lock belongs to the open file, so two opens
// in one process exclude each other as two processes do).
func flock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return ErrInUse
		}
		return err
	}
}

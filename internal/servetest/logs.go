package servetest

import (
	"bytes"
	"sync"
	"time"
)

// logBuffer keeps what a process writes and wakes whoever waits for a
// line: a wait is a signal, not a poll.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitLine waits until match accepts a whole line written so far, and
// reports whether one did before within passed or exited closed.
func (b *logBuffer) waitLine(match func(line []byte) bool, exited <-chan struct{}, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	seen := 0 // the lines already looked at
	for {
		b.mu.Lock()
		lines := bytes.Split(b.buf.Bytes(), []byte("\n"))
		lines = lines[:len(lines)-1] // the last is unfinished, or empty
		changed := b.changed
		for _, line := range lines[seen:] {
			if match(line) {
				b.mu.Unlock()
				return true
			}
		}
		seen = len(lines)
		b.mu.Unlock()
		select {
		case <-changed:
		case <-exited:
			return b.hasLine(match)
		case <-deadline.C:
			return false
		}
	}
}

// hasLine reports whether match accepts a line written so far.
func (b *logBuffer) hasLine(match func(line []byte) bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, line := range bytes.Split(b.buf.Bytes(), []byte("\n")) {
		if match(line) {
			return true
		}
	}
	return false
}

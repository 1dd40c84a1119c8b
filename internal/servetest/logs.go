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

// waitLine waits until match accepts a line, each line offered once in
// the order written, and reports whether one did before within passed or
// exited closed. Once exited is closed every write has landed (exec's
// Wait copies the output first), so the last, unfinished line is offered
// too.
func (b *logBuffer) waitLine(match func(line []byte) bool, exited <-chan struct{}, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	seen, last := 0, false // lines already offered; whether the unfinished one is offered too
	for {
		b.mu.Lock()
		lines := bytes.Split(b.buf.Bytes(), []byte("\n"))
		if !last {
			lines = lines[:len(lines)-1]
		}
		changed := b.changed
		for _, line := range lines[seen:] {
			if match(line) {
				b.mu.Unlock()
				return true
			}
		}
		seen = len(lines)
		b.mu.Unlock()
		if last {
			return false
		}
		select {
		case <-changed:
		case <-exited:
			last = true
		case <-deadline.C:
			return false
		}
	}
}

//go:build linux

package hook

import (
	"sync"
	"syscall"
)

// hangups notices parked connections whose client went away, as net/http's
// background read does for a connection it serves: one epoll set holds
// every parked socket, and one goroutine waits on it while any is parked
// (a second poller beside the runtime's, which parked sockets no longer
// use). A socket whose client closed its side (or reset it) hangs its poll
// up; a request the client sent after its long-poll (pipelined) does not.
type hangups struct {
	mu      sync.Mutex
	epfd    int // 0: no set open
	watched map[uint32]*parkedPoll
	next    uint32 // tokens, so that a late event never reaches another poll
	running bool
}

// hangupWaitMillis is how long the watcher waits for an event before it
// looks whether any poll is still parked.
const hangupWaitMillis = 1000

// watch adds p's socket to the set. When the set or the socket cannot be
// had, p's hang-up goes unnoticed until it is answered.
func (hu *hangups) watch(p *parkedPoll) {
	sc, ok := p.conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	hu.mu.Lock()
	defer hu.mu.Unlock()
	if hu.epfd == 0 {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		hu.epfd = fd
		hu.watched = make(map[uint32]*parkedPoll)
	}
	hu.next++
	token := hu.next
	ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(token)}
	var added error
	if err := raw.Control(func(fd uintptr) { added = syscall.EpollCtl(hu.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) }); err != nil || added != nil {
		return
	}
	p.token = token
	hu.watched[token] = p
	if !hu.running {
		hu.running = true
		go hu.run(hu.epfd)
	}
}

// forget removes p before its connection is closed (the close takes the
// socket out of the set).
func (hu *hangups) forget(p *parkedPoll) {
	hu.mu.Lock()
	delete(hu.watched, p.token)
	hu.mu.Unlock()
}

// run hangs up the polls whose clients went away, until none is parked;
// then it closes the set.
func (hu *hangups) run(epfd int) {
	events := make([]syscall.EpollEvent, 64)
	for {
		n, err := syscall.EpollWait(epfd, events, hangupWaitMillis)
		if err != nil {
			n = 0 // EINTR; anything else recurs and the loop ends with the polls
		}
		var gone []*parkedPoll
		hu.mu.Lock()
		for _, ev := range events[:n] {
			if p, ok := hu.watched[uint32(ev.Fd)]; ok {
				delete(hu.watched, uint32(ev.Fd))
				gone = append(gone, p)
			}
		}
		if len(hu.watched) == 0 && len(gone) == 0 {
			hu.running = false
			syscall.Close(epfd)
			hu.epfd = 0
			hu.mu.Unlock()
			return
		}
		hu.mu.Unlock()
		for _, p := range gone {
			p.hangUp()
		}
	}
}

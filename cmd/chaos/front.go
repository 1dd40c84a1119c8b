package main

import (
	"io"
	"net"
	"strings"
	"sync"
)

// front is a TCP load balancer in front of the fleet, as an operator puts
// one before replicas: each connection it accepts goes to a replica that
// serves just then. A client configured with one URL (countersign mcp's
// COUNTERSIGN_URL) so outlives the replicas it talks to, which come back
// on new ports. A connection whose replica dies is cut, as a balancer
// would cut it; no replica serving closes the connection at once.
type front struct {
	r     *run
	ln    net.Listener
	conns sync.WaitGroup
}

// startFront listens on a loopback port; s stops it.
func (r *run) startFront(s *scope) (*front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &front{r: r, ln: ln}
	go f.accept()
	s.Cleanup(func() { ln.Close(); f.conns.Wait() })
	return f, nil
}

// url is the front's base URL.
func (f *front) url() string { return "http://" + f.ln.Addr().String() }

func (f *front) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.conns.Add(1)
		go func() { defer f.conns.Done(); f.relay(c) }()
	}
}

// relay joins one client connection to a serving replica until either side
// closes, counting it as a waiting client's on that replica meanwhile so
// that kills aimed at waiters strike it too.
func (f *front) relay(c net.Conn) {
	defer c.Close()
	base := f.r.fleet.pick()
	if base == "" {
		return
	}
	up, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return
	}
	defer up.Close()
	f.r.mu.Lock()
	f.r.waitingOn[base]++
	f.r.mu.Unlock()
	defer func() {
		f.r.mu.Lock()
		f.r.waitingOn[base]--
		f.r.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both
}

package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen binds serve's address, saying which setting to change when the
// address is taken.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listening on %s: the address is already in use (another countersign?); set COUNTERSIGN_LISTEN to a free address such as 127.0.0.1:8081", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s (COUNTERSIGN_LISTEN): %w", addr, err)
	}
	return ln, nil
}

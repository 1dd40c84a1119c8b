package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// listen binds serve's address, saying which setting to change when the
// address is taken.
func listen(addr string) (net.Listener, error) { return listenAs(addr, "COUNTERSIGN_LISTEN") }

// listenAs binds addr, the value of the setting named, and says which setting
// to change when it cannot.
func listenAs(addr, setting string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listening on %s: the address is already in use (another countersign?); set %s to a free address such as 127.0.0.1:8081", addr, setting)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s (%s): %w", addr, setting, err)
	}
	return ln, nil
}

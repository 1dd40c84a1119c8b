package main

import (
	"fmt"
	"sync"
	"testing"
)

// scope lends the helpers written for tests (storetest's fresh database,
// bottest's fake Slack) to this program: they need only Cleanup and a way
// to fail, which a testing.TB gives them. A failure panics with a
// scopeFailure that run turns back into an error.
type scope struct {
	testing.TB // never called: only the methods below are

	mu       sync.Mutex
	cleanups []func()
}

type scopeFailure struct{ msg string }

func (s *scope) Helper() {}

func (s *scope) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *scope) Fatalf(format string, args ...any) { panic(scopeFailure{fmt.Sprintf(format, args...)}) }
func (s *scope) Fatal(args ...any)                 { panic(scopeFailure{fmt.Sprint(args...)}) }
func (s *scope) Errorf(format string, args ...any) { fmt.Printf("cleanup: "+format+"\n", args...) }
func (s *scope) Logf(format string, args ...any)   { fmt.Printf(format+"\n", args...) }

// close runs the cleanups, last registered first, as testing does.
func (s *scope) close() {
	s.mu.Lock()
	fs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// recoverFailure turns a scope's panic into *err; any other panic goes on.
func recoverFailure(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(scopeFailure)
		if !ok {
			panic(r)
		}
		*err = fmt.Errorf("%s", f.msg)
	}
}

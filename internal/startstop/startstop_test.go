package startstop

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// service is the smallest service built on Base: one loop that runs until
// Stop begins or its context ends.
type service struct {
	Base
	loops atomic.Int32
}

func (s *service) Start(ctx context.Context) error {
	ctx, err := s.StartInit(ctx)
	if err != nil {
		return err
	}
	return s.Go(func() {
		s.loops.Add(1)
		defer s.loops.Add(-1)
		select {
		case <-s.Stopping():
		case <-ctx.Done():
		}
	})
}

func TestStartTwiceAndStartAfterStop(t *testing.T) {
	t.Parallel()
	s := &service{}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("a second Stop = %v", err)
	}
	if n := s.loops.Load(); n != 0 {
		t.Fatalf("%d loops still running after Stop", n)
	}
}

func TestStopBeforeStart(t *testing.T) {
	t.Parallel()
	s := &service{}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
	if _, _, err := s.Enter(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Enter after Stop = %v, want ErrStopped", err)
	}
}

func TestSignals(t *testing.T) {
	t.Parallel()
	s := &service{}
	started, stopping, stopped := s.Started(), s.Stopping(), s.Stopped()
	for _, ch := range []<-chan struct{}{started, stopping, stopped} {
		if isClosed(ch) {
			t.Fatal("a signal is closed before Start")
		}
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-started
	if s.IsStopping() {
		t.Fatal("stopping before Stop")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-stopping
	<-stopped
}

// Stop waits for work let in before it began, not cut short: the work's
// context is not cancelled by the caller's, nor by Stop while it waits.
func TestStopWaitsForWorkInProgress(t *testing.T) {
	t.Parallel()
	s := &service{}
	caller, cancelCaller := context.WithCancel(context.Background())
	work, leave, err := s.Enter(caller)
	if err != nil {
		t.Fatal(err)
	}
	cancelCaller()
	release := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer leave()
		defer close(finished)
		select {
		case <-release:
		case <-work.Done():
			t.Error("the work was cancelled")
		}
	}()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	<-s.Stopping()
	if _, _, err := s.Enter(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Enter while stopping = %v, want ErrStopped", err)
	}
	if err := s.Go(func() { t.Error("Go ran after Stop") }); !errors.Is(err, ErrStopped) {
		t.Fatalf("Go while stopping = %v, want ErrStopped", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) with work in progress", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	default:
		t.Fatal("Stop returned before the work ended")
	}
}

// When Stop's context ends, the work is cut off and Stop still returns
// only once it has unwound.
func TestStopCutsOffWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	s := &service{}
	if err := s.Start(context.WithoutCancel(context.Background())); err != nil {
		t.Fatal(err)
	}
	work, leave, err := s.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var unwound atomic.Bool
	unwind := make(chan struct{}) // the test says when unwinding ends
	go func() {
		defer leave()
		<-work.Done()
		<-unwind
		unwound.Store(true)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(ctx) }()
	<-work.Done()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the cut work was unwinding", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(unwind)
	if err := <-stopped; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop = %v, want DeadlineExceeded", err)
	}
	if !unwound.Load() {
		t.Fatal("Stop returned before the cut work unwound")
	}
}

// UntilStopping's context ends as soon as Stop begins.
func TestUntilStopping(t *testing.T) {
	t.Parallel()
	s := &service{}
	ctx, err := s.StartInit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	loop := s.UntilStopping(ctx)
	if err := s.Go(func() { <-loop.Done() }); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("Start's context was cancelled by a Stop that was not cut short")
	}
}

// Many goroutines enter while Stop begins: every one let in is waited for,
// every one refused ran nothing (run with -race).
func TestEnterRacingStop(t *testing.T) {
	t.Parallel()
	for range 50 {
		s := &service{}
		var running, admitted atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_ = s.Go(func() {
					admitted.Add(1)
					running.Add(1)
					time.Sleep(time.Millisecond)
					running.Add(-1)
				})
			})
		}
		if err := s.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := running.Load(); n != 0 {
			t.Fatalf("Stop returned with %d of %d goroutines running", n, admitted.Load())
		}
		wg.Wait()
		if n := running.Load(); n != 0 {
			t.Fatalf("a goroutine ran after Stop returned")
		}
	}
}

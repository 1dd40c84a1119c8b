// Package startstop is the start/stop base embedded by countersign's
// long-running services (after River's startstop.BaseStartStop): one Start,
// a Stop that waits for every goroutine the service started and every piece
// of work it let in, and signals for each step, under one mutex.
//
// A service's Start calls StartInit and runs its loops with Go; work that
// callers bring in from outside the loops (a sweep's dispatch, say) registers
// with Enter. Stop closes Stopping, so nothing new is let in, and waits. If
// Stop's context ends first it cancels the contexts StartInit and Enter
// handed out (the cut) and waits for what they run to unwind.
package startstop

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Errors of Start and Enter.
var (
	// ErrStarted: Start was called on a service already started.
	ErrStarted = errors.New("already started")
	// ErrStopped: the service was asked to start or take work after Stop.
	ErrStopped = errors.New("stopped")
)

// Base is embedded by a service; its zero value is ready.
type Base struct {
	mu       sync.Mutex
	init     bool
	started  chan struct{} // closed by StartInit
	stopping chan struct{} // closed when Stop begins
	stopped  chan struct{} // closed when Stop has waited for everything
	cut      context.Context
	cutOff   context.CancelFunc
	stop     context.Context // cancelled when Stop begins
	stopNow  context.CancelFunc
	work     sync.WaitGroup
}

// lazyInit makes the channels; b.mu is held.
func (b *Base) lazyInit() {
	if b.init {
		return
	}
	b.init = true
	b.started = make(chan struct{})
	b.stopping = make(chan struct{})
	b.stopped = make(chan struct{})
	b.cut, b.cutOff = context.WithCancel(context.Background())
	b.stop, b.stopNow = context.WithCancel(b.cut)
}

// StartInit begins a Start: it refuses a second start (ErrStarted) and a
// start after Stop (ErrStopped), else marks the service started and returns
// ctx, cancelled as well when Stop cuts the service off. The context carries
// ctx's cancellation; a service that must outlive its starter's context
// passes context.WithoutCancel(ctx).
func (b *Base) StartInit(ctx context.Context) (context.Context, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lazyInit()
	if isClosed(b.stopping) {
		return nil, ErrStopped
	}
	if isClosed(b.started) {
		return nil, ErrStarted
	}
	close(b.started)
	return endWith(ctx, b.cut), nil
}

// UntilStopping returns ctx, also cancelled as soon as Stop begins: for
// loops that have nothing to finish, such as a listener's.
func (b *Base) UntilStopping(ctx context.Context) context.Context {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lazyInit()
	return endWith(ctx, b.stop)
}

// endWith returns ctx, also cancelled when end ends. The hook on end is
// released when ctx ends, whichever comes first.
func endWith(ctx, end context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(end, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return ctx
}

// Go runs f in a goroutine that Stop waits for. Once Stop has begun it runs
// nothing and returns ErrStopped.
func (b *Base) Go(f func()) error {
	leave, err := b.enter()
	if err != nil {
		return err
	}
	go func() {
		defer leave()
		f()
	}()
	return nil
}

// Enter lets in one piece of work that Stop waits for, unless Stop has
// begun (ErrStopped) or ctx has ended. The context it returns keeps ctx's
// values but not its cancellation: it ends only when Stop cuts the service
// off, or when leave is called. Call leave once the work is done.
func (b *Base) Enter(ctx context.Context) (work context.Context, leave func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	done, err := b.enter()
	if err != nil {
		return nil, nil, err
	}
	work, cancel := context.WithCancel(endWith(context.WithoutCancel(ctx), b.cut))
	return work, func() { cancel(); done() }, nil
}

// enter counts one piece of work, under the mutex that Stop closes
// stopping under: nothing is counted once Stop waits.
func (b *Base) enter() (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lazyInit()
	if isClosed(b.stopping) {
		return nil, ErrStopped
	}
	b.work.Add(1)
	var once sync.Once
	return func() { once.Do(b.work.Done) }, nil
}

// Stop closes Stopping and waits until every goroutine started with Go and
// every piece of work let in with Enter has ended. If ctx ends first, it
// cancels their contexts (the cut), waits for them to unwind and returns an
// error wrapping ctx's cause. Stop may be called more than once, and before
// Start; each call waits.
func (b *Base) Stop(ctx context.Context) error {
	b.mu.Lock()
	b.lazyInit()
	if !isClosed(b.stopping) {
		close(b.stopping)
		b.stopNow()
		go func() {
			b.work.Wait()
			close(b.stopped)
		}()
	}
	b.mu.Unlock()
	select {
	case <-b.stopped:
		return nil
	case <-ctx.Done():
	}
	b.cutOff()
	<-b.stopped
	return fmt.Errorf("what was running was cut off: %w", context.Cause(ctx))
}

// Started is closed once Start has succeeded.
func (b *Base) Started() <-chan struct{} { return b.signal(func() chan struct{} { return b.started }) }

// Stopping is closed once Stop has begun: a service's loops stop taking
// new work when it closes.
func (b *Base) Stopping() <-chan struct{} {
	return b.signal(func() chan struct{} { return b.stopping })
}

// Stopped is closed once Stop has waited for everything the service ran.
func (b *Base) Stopped() <-chan struct{} { return b.signal(func() chan struct{} { return b.stopped }) }

// IsStopping reports whether Stop has begun.
func (b *Base) IsStopping() bool { return isClosed(b.Stopping()) }

func (b *Base) signal(ch func() chan struct{}) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lazyInit()
	return ch()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

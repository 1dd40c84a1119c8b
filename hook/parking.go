package hook

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/store"
)

// parking holds the long-polls whose connections are parked: taken from
// the HTTP server once they must wait, so that a waiter costs its socket,
// a timer and a few hundred bytes instead of net/http's two goroutines and
// their buffers (docs/BENCHMARKS.md, "Waiting agents"). A change to a
// waiter's request, its deadline or the end of parking starts a goroutine
// for that waiter alone, which parks it again or answers it (parkedPoll).
//
// The HTTP server does not track a connection it gave away, so serve's
// shutdown ends parking itself (Handler.AnswerParked): each poll, from
// the moment it takes its connection to its answer, is work on parking's
// start/stop base, which AnswerParked stops.
type parking struct {
	// notifier calls a parked poll on a change; nil when the notifier
	// cannot, and nothing parks.
	notifier store.ChangeCaller
	// hangups notices the parked connections whose client went away.
	hangups hangups

	mu       sync.Mutex
	polls    map[*parkedPoll]struct{}
	stopping bool // set, under mu, before the polls parked then are woken

	// sinceCollect counts the polls parked since the last collection;
	// collect runs the next once parking is quiet (collectAfterBurst).
	sinceCollect int
	collect      *time.Timer

	startstop.Base // each poll is work let in with Enter
}

// A parked poll leaves net/http's two goroutines, their stacks and the
// connection's buffers as garbage, and a server whose waiters only wait
// allocates nothing: the runtime, which collects as the heap grows, would
// keep the peak of a burst of arrivals until its forced collection two
// minutes on. Once collectAfter polls have parked since the last
// collection and none has for collectQuiet, parking collects once and
// returns the freed memory to the system. Under a steady stream of
// arrivals it never runs: their allocations drive the collector.
const (
	collectAfter = 1000
	collectQuiet = time.Second
)

func newParking(listener store.Notifier) *parking {
	p := &parking{polls: make(map[*parkedPoll]struct{})}
	p.notifier, _ = listener.(store.ChangeCaller)
	return p
}

// begin lets in a poll about to take its connection, so that shutdown
// waits for it even before it is parked. It returns the poll's context,
// cancelled only if shutdown runs out of time, and leave, which the poll
// calls once answered or if it does not get its connection; ok is false
// once shutdown has begun, when the poll must be answered at once.
func (p *parking) begin() (work context.Context, leave func(), ok bool) {
	work, leave, err := p.Enter(context.Background())
	return work, leave, err == nil
}

// add parks a poll begin counted; it reports whether parking is stopping,
// when the poll must be answered at once.
func (p *parking) add(poll *parkedPoll) (stopping bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.polls[poll] = struct{}{}
	p.sinceCollect++
	if p.sinceCollect >= collectAfter {
		if p.collect == nil {
			p.collect = time.AfterFunc(collectQuiet, p.collectAfterBurst)
		} else {
			p.collect.Reset(collectQuiet)
		}
	}
	return p.stopping
}

// collectAfterBurst collects the garbage a burst of parked polls left.
func (p *parking) collectAfterBurst() {
	p.mu.Lock()
	p.sinceCollect = 0
	p.mu.Unlock()
	debug.FreeOSMemory()
}

// done removes an answered poll.
func (p *parking) done(poll *parkedPoll) {
	p.mu.Lock()
	delete(p.polls, poll)
	p.mu.Unlock()
	poll.leave()
}

// isStopping reports whether parking has stopped: waiters are answered
// rather than parked again.
func (p *parking) isStopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// parked returns how many polls are parked now.
func (p *parking) parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.polls)
}

// stop wakes every parked poll to be answered, once.
func (p *parking) stop() {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return
	}
	p.stopping = true
	polls := make([]*parkedPoll, 0, len(p.polls))
	for poll := range p.polls {
		polls = append(polls, poll)
	}
	p.mu.Unlock()
	for _, poll := range polls {
		poll.wake()
	}
}

// wait stops the base and returns once every poll is answered after stop;
// when ctx ends first, it cuts the polls' re-reads off and closes the
// connections of the rest, unanswered.
func (p *parking) wait(ctx context.Context) error {
	left := 0
	defer context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		left = len(p.polls)
		for poll := range p.polls {
			poll.conn.Close()
		}
	})()
	if err := p.Base.Stop(ctx); err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return fmt.Errorf("answering parked long-polls: %d left unanswered: %w", left, err)
	}
	return nil
}

// StopParking answers every parked long-poll now, each with the request's
// representation as it reads it then, and from now on answers a long-poll
// that would park at once. Serve calls it as its HTTP server shuts down.
func (h *Handler) StopParking() { h.parking.stop() }

// AnswerParked stops parking and returns once every parked long-poll is
// answered; when ctx ends first, it closes the connections of the rest.
func (h *Handler) AnswerParked(ctx context.Context) error {
	h.parking.stop()
	return h.parking.wait(ctx)
}

package delivery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Budget is the pace of every lane shared by the fleet, kept in the
// ledger (store.Ledger's TakePostSlot, PauseLane and LanePause).
type Budget interface {
	// TakeSlot takes lane's next slot, interval after the one before it
	// and not before a pause ends, and says how long from now it comes.
	TakeSlot(ctx context.Context, lane string, interval time.Duration) (time.Duration, error)
	// Pause holds lane back for at least d from now.
	Pause(ctx context.Context, lane string, d time.Duration) error
	// PauseLeft is how long lane's pause still runs (zero: none).
	PauseLeft(ctx context.Context, lane string) (time.Duration, error)
}

// ReasonPaused is the reason of an item put back while its lane is paused.
const ReasonPaused = "channel paused by a rate limit"

// Pacer spaces the posts of each lane by an interval across the fleet and
// holds a lane back while a rate limit's pause runs. When the Budget
// cannot answer, this process paces and pauses on its own.
type Pacer struct {
	budget   Budget
	interval time.Duration // negative: no spacing
	logger   *slog.Logger

	mu     sync.Mutex
	next   map[string]time.Time // lane → this process's earliest next post
	paused map[string]time.Time // lane → end of a pause this process met
}

// NewPacer returns a Pacer over budget; a negative interval spaces nothing
// (tests), though pauses still hold.
func NewPacer(budget Budget, interval time.Duration, logger *slog.Logger) *Pacer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Pacer{budget: budget, interval: interval, logger: logger,
		next: make(map[string]time.Time), paused: make(map[string]time.Time)}
}

// Wait waits for lane's next slot. A pause another replica met while this
// one waited comes back as a Postponed error.
func (p *Pacer) Wait(ctx context.Context, lane string) error {
	if p.interval < 0 {
		return nil
	}
	d, err := p.budget.TakeSlot(ctx, lane, p.interval)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.logger.Warn("taking a post slot from the shared budget failed; pacing this process alone",
			slog.String("channel", lane), slog.String("error", err.Error()))
		d = p.localSlot(lane)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	if left, err := p.budget.PauseLeft(ctx, lane); err == nil && left > 0 {
		return Postpone(left, ReasonPaused)
	}
	return nil
}

// localSlot is this process's own next slot for lane, from now.
func (p *Pacer) localSlot(lane string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	at := latest(p.next[lane], now)
	p.next[lane] = at.Add(p.interval)
	return at.Sub(now)
}

// Pause holds lane back for d on every replica: in the Budget, and in this
// process too for when the Budget cannot be reached.
func (p *Pacer) Pause(ctx context.Context, lane string, d time.Duration) {
	p.mu.Lock()
	p.paused[lane] = latest(p.paused[lane], time.Now().Add(d))
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := p.budget.Pause(ctx, lane, d); err != nil {
		p.logger.Warn("sharing a rate limit's pause failed; this process alone waits it out",
			slog.String("channel", lane), slog.String("error", err.Error()))
	}
}

// PausedUntil is when lane's pause ends, this process's or another
// replica's; zero when it is not paused.
func (p *Pacer) PausedUntil(ctx context.Context, lane string) time.Time {
	p.mu.Lock()
	until, ok := p.paused[lane]
	if ok && time.Now().After(until) {
		delete(p.paused, lane)
		until = time.Time{}
	}
	p.mu.Unlock()
	if !until.IsZero() {
		return until
	}
	d, err := p.budget.PauseLeft(ctx, lane)
	if err != nil || d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

func latest(ts ...time.Time) time.Time { return slices.MaxFunc(ts, time.Time.Compare) }

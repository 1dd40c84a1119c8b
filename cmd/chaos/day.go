package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/fakeslack"
)

// DayOptions size a simulated day: 24 hours of a shared countersign's
// traffic replayed in Day of wall time against the fleet.
type DayOptions struct {
	Day      time.Duration // wall time of the 24 simulated hours
	Replicas int
	Teams    int // agents, one token each, posting for their team's tools
	Channels int // Slack channels; two tools' cards go to each
	Intents  int // intents posted over the day (the curve's mean), bursts and replays among them
	// ReplayShare of the posts send an earlier intent again; BurstShare of
	// them arrive in bursts of BurstMin to BurstMax from one agent at once.
	ReplayShare, BurstShare float64
	BurstMin, BurstMax      int
	// RequestTTL is how long a request waits for its reviewer, simulated.
	RequestTTL time.Duration
	Drain      time.Duration // the most the fleet gets to settle after the day
	// SettleShare is the most of its peak the pending queue may still
	// hold in the day's last hour.
	SettleShare float64
	// DispatchP99 bounds approval-to-dispatch latency's 99th percentile
	// over the day (wall time: machines are not slowed down). The tiny
	// day's few writes make its p99 their slowest, which a write claimed
	// by the replica killed at noon can make the claim timeout.
	DispatchP99 time.Duration
	Log         func(format string, args ...any)
}

// The two sizes of a day. The full one is make simulate-day; the tiny one
// runs inside go test. In the tiny day's thirty intents the few that no
// reviewer ever looks at wait out their TTL and can be
// most of the last hour's queue, so its pending queue is held only to its
// peak; the full day holds it to a quarter. Its TTL (30 simulated hours,
// 18 s) outlasts the outbox lease (8 s) with room for the channel's pacing
// on a busy machine: a card whose post the replica killed at noon had
// claimed comes back only when the lease runs out, and with a shorter TTL
// its request could expire first and never get a card (at 12 s, one did on
// a loaded run).
var (
	fullDay = DayOptions{Day: 270 * time.Second, Replicas: 3, Teams: 40, Channels: 16, Intents: 400,
		ReplayShare: 0.1, BurstShare: 0.2, BurstMin: 20, BurstMax: 40, RequestTTL: 2 * time.Hour, Drain: 90 * time.Second, SettleShare: 0.25, DispatchP99: 2 * time.Second}
	tinyDay = DayOptions{Day: 15 * time.Second, Replicas: 2, Teams: 6, Channels: 8, Intents: 30,
		ReplayShare: 0.1, BurstShare: 0.3, BurstMin: 4, BurstMax: 8, RequestTTL: 30 * time.Hour, Drain: 20 * time.Second, SettleShare: 1, DispatchP99: maxRecovery}
)

// The reviewers, in simulated time. A review's delay, from the card
// reaching Slack to the click, is lognormal: median 3 minutes, σ 1.3, so
// 90% are decided within 16 minutes and 99% within an hour, while a few
// wait for hours (someone in a meeting, away, asleep). Requests expire
// after RequestTTL (2 hours in the full day); a reviewer whose delay is
// longer finds the request expired and does nothing. A reminder goes to
// the thread after 30 minutes.
const (
	reviewMedian   = 3 * time.Minute
	reviewSigma    = 1.3
	remindAfter    = 30 * time.Minute
	approveShare   = 0.88 // of the reviews; rejectShare of them reject
	rejectShare    = 0.07 // and the rest (5%) are never looked at
	killAt         = 12 * time.Hour
	restartAfter   = 20 * time.Minute // simulated: the replica's supervisor brings it back
	sampleEvery    = 5 * time.Minute  // simulated: how often queue depths are read
	simulatedDay   = 24 * time.Hour
	dayToolsPerCh  = 2
	dayConcurrency = 16 // posts of one burst in flight at once, as an agent fleet's workers
)

// hourWeights is the traffic curve: the relative intent rate in each
// simulated hour. A quiet night, a morning ramp, a dip at lunch, an
// afternoon peak, a long evening tail.
var hourWeights = [24]float64{
	0.15, 0.12, 0.1, 0.1, 0.12, 0.2, 0.35, 0.7, 1.1, 1.5, 1.7, 1.6,
	1.2, 1.6, 2.1, 2.4, 2.2, 1.6, 1.0, 0.7, 0.5, 0.35, 0.25, 0.18,
}

// day is one simulated day's state, beside the run whose fleet, agents'
// posting and clicking it uses.
type day struct {
	*run
	opts  DayOptions
	start time.Time // simulated midnight

	mu       sync.Mutex
	byID     map[string]*intent
	arrivals []arrival
	samples  []sample
	reviews  map[string]int       // what the reviewers did: approve, reject, never, too late
	cards    map[string]time.Time // request id → when its card reached Slack
	killedAt time.Time
	back     time.Time
	humans   sync.WaitGroup
	sequence atomic.Int64 // numbers the intents' steps
}

// arrival is one post an agent made.
type arrival struct {
	At     time.Time
	Replay bool
}

// sample is the fleet's queues at one moment, read from the database.
type sample struct {
	At                               time.Time
	Pending, Ready, InFlight, Outbox int
}

// real converts a simulated duration to wall time.
func (d *day) real(sim time.Duration) time.Duration {
	return time.Duration(float64(sim) * float64(d.opts.Day) / float64(simulatedDay))
}

// simulated converts a wall-clock moment to the simulated time of day.
func (d *day) simulated(at time.Time) time.Duration {
	return time.Duration(float64(at.Sub(d.start)) * float64(simulatedDay) / float64(d.opts.Day))
}

// SimulateDay plays a simulated day and returns its hourly table and
// checked figures.
func SimulateDay(ctx context.Context, opts DayOptions) (rep DayReport, err error) {
	s := &scope{}
	defer s.close()
	d := &day{run: newRun(Options{Log: opts.Log}), opts: opts, byID: map[string]*intent{},
		reviews: map[string]int{}, cards: map[string]time.Time{}}
	if err := d.startFleet(ctx, s, opts.Replicas, d.configYAML); err != nil {
		return rep, err
	}
	d.slack.AfterPost(d.review)
	opts.Log("%d replicas serving; %d teams, %d channels, about %d intents over a day of %s (1 simulated minute = %s)",
		opts.Replicas, opts.Teams, opts.Channels, opts.Intents, opts.Day, d.real(time.Minute).Round(time.Millisecond))

	d.start = time.Now()
	d.started = d.start
	dayCtx, endDay := context.WithDeadline(ctx, d.start.Add(opts.Day))
	defer endDay()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); d.traffic(dayCtx) }()
	go func() { defer wg.Done(); d.noonKill(dayCtx, ctx) }()
	go func() { defer wg.Done(); d.sampleQueues(ctx, dayCtx) }()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	opts.Log("the day is over; waiting for the last reviews and for the queues to drain")
	d.humans.Wait()
	drained := d.drainDay(ctx)
	return d.report(ctx, drained)
}

// configYAML is the shared service's configuration: a token per team,
// two tools per channel, one approval each, every tool at the key-aware
// provider.
func (d *day) configYAML(keyedURL, _, _ string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `slack: {channel: %s}
executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
  expiry_schedule: "@every 1s"
  reminder_schedule: "@every 1s"
agents:
`, dayChannel(0))
	for t := range d.opts.Teams {
		sum := sha256.Sum256([]byte(teamToken(t)))
		fmt.Fprintf(&b, "  - {name: %s, token_sha256: %s}\n", teamName(t), hex.EncodeToString(sum[:]))
	}
	b.WriteString("tools:\n")
	for i := range d.tools() {
		fmt.Fprintf(&b, `  %s:
    channel: %s
    approvers: [%s]
    dispatch: {url: "%s/credits", timeout: 3s}
    key_aware: true
    claim_timeout: 5s
    request_ttl: %s
    remind_after: %s
    reject_reason: off
`, dayTool(i), dayChannel(i/dayToolsPerCh), strings.Join(approvers, ", "), keyedURL, d.real(d.opts.RequestTTL), d.real(remindAfter))
	}
	return b.String()
}

func (d *day) tools() int { return d.opts.Channels * dayToolsPerCh }

func teamName(t int) string   { return fmt.Sprintf("team-%02d", t) }
func teamToken(t int) string  { return fmt.Sprintf("day-token-%02d", t) }
func dayTool(i int) string    { return fmt.Sprintf("team.tool-%02d", i) }
func dayChannel(c int) string { return fmt.Sprintf("C0DAY%02d", c) }

// traffic posts the day's intents: each simulated minute, a Poisson
// number of single intents and of bursts at the curve's rate for that
// hour, from random teams.
func (d *day) traffic(ctx context.Context) {
	var total float64
	for _, w := range hourWeights {
		total += w
	}
	meanBurst := float64(d.opts.BurstMin+d.opts.BurstMax) / 2
	tick := d.real(time.Minute)
	var posting sync.WaitGroup
	defer posting.Wait()
	for minute := 0; ctx.Err() == nil; minute++ {
		at := d.start.Add(tick * time.Duration(minute))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		hour := min(minute/60, 23)
		perMinute := float64(d.opts.Intents) * hourWeights[hour] / total / 60
		for range poisson(perMinute * (1 - d.opts.BurstShare)) {
			posting.Add(1)
			go func() { defer posting.Done(); d.postOne(ctx, rand.IntN(d.opts.Teams)) }()
		}
		for range poisson(perMinute * d.opts.BurstShare / meanBurst) {
			posting.Add(1)
			go func() { defer posting.Done(); d.burst(ctx, rand.IntN(d.opts.Teams)) }()
		}
	}
}

// burst is an agent fleet dumping dozens of intents at once.
func (d *day) burst(ctx context.Context, team int) {
	n := d.opts.BurstMin + rand.IntN(d.opts.BurstMax-d.opts.BurstMin+1)
	sem := make(chan struct{}, dayConcurrency)
	var wg sync.WaitGroup
	for range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() { defer wg.Done(); defer func() { <-sem }(); d.postOne(ctx, team) }()
	}
	wg.Wait()
}

// postOne posts a new intent of team's, or sends an earlier one again
// with its agent's token (a replay: an agent retrying, or a run started
// over), as the chaos agents do.
func (d *day) postOne(ctx context.Context, team int) {
	replay := rand.Float64() < d.opts.ReplayShare
	d.mu.Lock()
	d.arrivals = append(d.arrivals, arrival{At: time.Now(), Replay: replay})
	d.mu.Unlock()
	if replay {
		d.replayOne(ctx)
		return
	}
	// A team works with three tools, whose cards go to three channels: a
	// burst spreads over them.
	tool := (team*7 + dayToolsPerCh*rand.IntN(3)) % d.tools()
	in := d.acknowledge(ctx, teamToken(team), validIntent(teamName(team), int(d.sequence.Add(1)), dayTool(tool)), dayTool(tool))
	if in == nil {
		return
	}
	in.Channel = dayChannel(tool / dayToolsPerCh)
	d.mu.Lock()
	d.byID[in.ID] = in
	d.mu.Unlock()
}

// review is a reviewer seeing a card land in Slack: after a lognormal
// delay they approve, reject, or leave it; one who would take longer than
// the request lives finds it expired.
func (d *day) review(m fakeslack.Message) {
	var md struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	if json.Unmarshal(m.Metadata, &md) != nil || md.EventType != bot.CardEventType {
		return
	}
	id, _ := md.EventPayload["request_id"].(string)
	delay := time.Duration(float64(reviewMedian) * math.Exp(reviewSigma*rand.NormFloat64()))
	verdict := "never"
	switch x := rand.Float64(); {
	case delay >= d.opts.RequestTTL:
		verdict = "too late"
	case x < approveShare:
		verdict = "approve"
	case x < approveShare+rejectShare:
		verdict = "reject"
	}
	d.mu.Lock()
	d.reviews[verdict]++
	if _, seen := d.cards[id]; !seen {
		d.cards[id] = time.Now()
	}
	d.mu.Unlock()
	if verdict != "approve" && verdict != "reject" {
		return
	}
	d.humans.Add(1)
	go func() {
		defer d.humans.Done()
		time.Sleep(d.real(delay))
		in := d.intentByID(id)
		if in == nil {
			// Its post was cut off by the end of the day before the answer
			// came back: stored, but never acknowledged to the agent.
			d.mu.Lock()
			d.reviews[verdict]--
			d.reviews["unacknowledged"]++
			d.mu.Unlock()
			return
		}
		in.Verdict = verdict
		d.click(in, approvers[rand.IntN(len(approvers))], verdict)
		if d.expiredFirst(in.ID) {
			// The card reached Slack late (its channel's queue) and the
			// request expired before the click: not a decision.
			in.Verdict = "too late"
			d.mu.Lock()
			d.reviews[verdict]--
			d.reviews["too late"]++
			d.mu.Unlock()
		}
	}()
}

// expiredFirst reports whether request id expired before its click.
func (d *day) expiredFirst(id string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var expired bool
	err := d.db.QueryRow(ctx, `SELECT status = 'expired' FROM requests WHERE id = $1`, id).Scan(&expired)
	return err == nil && expired
}

// intentByID finds an acknowledged intent, waiting a moment for an
// acknowledgement still on its way back to the agent (its card may be
// posted first).
func (d *day) intentByID(id string) *intent {
	deadline := time.Now().Add(10 * time.Second)
	for {
		d.mu.Lock()
		in := d.byID[id]
		d.mu.Unlock()
		if in != nil || time.Now().After(deadline) {
			return in
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noonKill kills one replica with SIGKILL at simulated noon and starts it
// again a little later, as a supervisor would.
func (d *day) noonKill(dayCtx, ctx context.Context) {
	select {
	case <-dayCtx.Done():
		return
	case <-time.After(time.Until(d.start.Add(d.real(killAt)))):
	}
	victim := d.fleet.replicas[0]
	victim.kill()
	d.mu.Lock()
	d.killedAt = time.Now()
	d.mu.Unlock()
	d.opts.Log("12:00  kill -9 %s", victim.name)
	time.Sleep(d.real(restartAfter))
	if err := victim.restart(ctx, d.opts.Log); err != nil {
		d.fail(fmt.Errorf("restarting %s: %w", victim.name, err))
		return
	}
	d.mu.Lock()
	d.back = time.Now()
	d.mu.Unlock()
	d.opts.Log("%s  %s serves again", clock(d.simulated(time.Now())), victim.name)
}

// sampleQueues reads the queue depths every few simulated minutes until
// the day ends.
func (d *day) sampleQueues(ctx, dayCtx context.Context) {
	every := max(d.real(sampleEvery), 100*time.Millisecond)
	for dayCtx.Err() == nil {
		if s, err := d.queues(ctx); err == nil {
			d.mu.Lock()
			d.samples = append(d.samples, s)
			d.mu.Unlock()
		}
		select {
		case <-dayCtx.Done():
		case <-time.After(every):
		}
	}
}

// queues reads the depths now: requests waiting for a human, approved
// writes waiting to be sent and being sent, Slack deliveries waiting.
func (d *day) queues(ctx context.Context) (sample, error) {
	s := sample{At: time.Now()}
	err := d.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM requests WHERE status = 'pending'),
		(SELECT count(*) FROM executions WHERE state = 'ready'),
		(SELECT count(*) FROM executions WHERE state IN ('claimed', 'unknown')),
		(SELECT count(*) FROM outbox WHERE state = 'pending')`).Scan(&s.Pending, &s.Ready, &s.InFlight, &s.Outbox)
	return s, err
}

// drainDay waits until no request is pending, no write is waiting or in
// flight and no Slack delivery is waiting; how long that took, or -1 when
// not within Drain.
func (d *day) drainDay(ctx context.Context) time.Duration {
	began := time.Now()
	for time.Since(began) < d.opts.Drain {
		s, err := d.queues(ctx)
		if err == nil {
			d.mu.Lock()
			d.samples = append(d.samples, s)
			d.mu.Unlock()
			if s.Pending+s.Ready+s.InFlight+s.Outbox == 0 {
				return time.Since(began)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return -1
}

// poisson draws from a Poisson distribution of mean lambda (Knuth's way:
// lambda is small here).
func poisson(lambda float64) int {
	limit, p, n := math.Exp(-lambda), rand.Float64(), 0
	for p > limit {
		p *= rand.Float64()
		n++
	}
	return n
}

// clock prints a simulated time of day as 15:04.
func clock(sim time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(sim.Hours()), int(sim.Minutes())%60)
}

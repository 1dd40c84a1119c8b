package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// HourRow is one simulated hour of the day: what arrived, how deep the
// queues got, how long humans and machines took, and what Slack saw.
type HourRow struct {
	Hour                        string // 00:00 … 23:00, or "drain" after the day
	IntentsPerMin               float64
	Replays                     int
	Pending, ToDispatch, Outbox int           // the deepest each queue was in the hour (to dispatch: ready and in flight)
	Outbox0                     int           // the outbox at the hour's end
	CardWaitP99                 time.Duration // simulated: intake to the card in Slack, for the hour's cards
	Cards                       int
	cardWaits                   []time.Duration // the waits behind CardWaitP99
	DecisionP50, DecisionP99    time.Duration   // simulated: the humans' scale
	DispatchP50, DispatchP99    time.Duration   // wall time: the machines' scale
	Decisions, Dispatches       int
	SlackPerMin, PostsPerMin    float64
	Note                        string
}

// DayReport is a simulated day's table and its checked figures.
type DayReport struct {
	Rows    []HourRow
	Figures Figures
}

// OK reports whether every checked figure held.
func (r DayReport) OK() bool { return len(r.Rows) > 0 && r.Figures.OK() }

// Table prints the hourly table, then the figures.
func (r DayReport) Table() string {
	var b strings.Builder
	b.WriteString("hours, card wait and decision latency are simulated time; intents/min, Slack calls/min and dispatch latency are wall-clock, as the fleet saw them;\n" +
		"queue depths are the deepest of the hour's samples (outbox end: the last one)\n\n")
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "hour\tintents/min\treplays\tpending\tto dispatch\toutbox max\toutbox end\tcard wait p99\tdecision p50\tp99\tdispatch p50\tp99\tSlack calls/min\tposts/min\t\t")
	for _, h := range r.Rows {
		fmt.Fprintf(w, "%s\t%.0f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t%s\t\n", h.Hour, h.IntentsPerMin, h.Replays,
			h.Pending, h.ToDispatch, h.Outbox, h.Outbox0, minutes(h.CardWaitP99, h.Cards), minutes(h.DecisionP50, h.Decisions), minutes(h.DecisionP99, h.Decisions),
			millis(h.DispatchP50, h.Dispatches), millis(h.DispatchP99, h.Dispatches), h.SlackPerMin, h.PostsPerMin, h.Note)
	}
	w.Flush()
	b.WriteString("\n" + r.Figures.Table())
	return b.String()
}

func minutes(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fm", d.Minutes())
}

func millis(d time.Duration, n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// settled is one decided request: when it was asked, decided and run.
type settled struct {
	Key              string
	Created, Decided time.Time
	Verdict          string
	Dispatched       []time.Time // the writes the provider received for its key
}

// report reads the database, the provider and the fake Slack, and builds
// the hourly table and the checks.
func (d *day) report(ctx context.Context, drained time.Duration) (DayReport, error) {
	var rep DayReport
	if err := d.failure(); err != nil {
		return rep, err
	}
	decided, err := d.decided(ctx)
	if err != nil {
		return rep, err
	}
	hours := d.hourOf(d.start.Add(d.opts.Day)) + 1 // 24, then the drain
	rows := make([]HourRow, hours)
	decisionLat := make([][]time.Duration, hours)
	dispatchLat := make([][]time.Duration, hours)
	var allDispatch []time.Duration
	for _, s := range decided {
		h := d.hourOf(s.Decided)
		decisionLat[h] = append(decisionLat[h], d.simulated(s.Decided)-d.simulated(s.Created))
		if len(s.Dispatched) > 0 {
			lat := s.Dispatched[0].Sub(s.Decided)
			dispatchLat[h] = append(dispatchLat[h], lat)
			allDispatch = append(allDispatch, lat)
		}
	}
	created, err := d.createdAt(ctx)
	if err != nil {
		return rep, err
	}
	cardWait := make([][]time.Duration, hours)
	d.mu.Lock()
	for id, at := range d.cards {
		if c, ok := created[id]; ok {
			h := d.hourOf(at)
			cardWait[h] = append(cardWait[h], d.simulated(at)-d.simulated(c))
		}
	}
	arrivals, samples := d.arrivals, d.samples
	killedAt, back := d.killedAt, d.back
	reviews := d.reviews
	d.mu.Unlock()
	perHour := d.real(time.Hour).Minutes()
	for _, a := range arrivals {
		h := d.hourOf(a.At)
		rows[h].IntentsPerMin += 1 / perHour
		if a.Replay {
			rows[h].Replays++
		}
	}
	for _, s := range samples {
		row := &rows[d.hourOf(s.At)]
		row.Pending, row.ToDispatch, row.Outbox = max(row.Pending, s.Pending), max(row.ToDispatch, s.Ready+s.InFlight), max(row.Outbox, s.Outbox)
		row.Outbox0 = s.Outbox
	}
	calls := d.slack.Calls("")
	for _, c := range calls {
		row := &rows[d.hourOf(c.At)]
		row.SlackPerMin++
		if c.Method == "chat.postMessage" {
			row.PostsPerMin++
		}
	}
	for h := range rows {
		row := &rows[h]
		row.Hour = fmt.Sprintf("%02d:00", h)
		length := perHour
		if h == hours-1 {
			row.Hour, row.IntentsPerMin = "drain", 0
			if n := len(samples); n > 0 {
				length = samples[n-1].At.Sub(d.start.Add(d.opts.Day)).Minutes()
			}
		}
		if length > 0 {
			row.SlackPerMin /= length
			row.PostsPerMin /= length
		}
		row.Decisions, row.Dispatches, row.Cards = len(decisionLat[h]), len(dispatchLat[h]), len(cardWait[h])
		row.CardWaitP99, row.cardWaits = percentile(cardWait[h], 99), cardWait[h]
		row.DecisionP50, row.DecisionP99 = percentile(decisionLat[h], 50), percentile(decisionLat[h], 99)
		row.DispatchP50, row.DispatchP99 = percentile(dispatchLat[h], 50), percentile(dispatchLat[h], 99)
	}
	if !killedAt.IsZero() {
		rows[d.hourOf(killedAt)].Note = "kill -9 " + d.fleet.replicas[0].name
		if !back.IsZero() {
			rows[d.hourOf(back)].Note += fmt.Sprintf(", back at %s", clock(d.simulated(back)))
		}
	}
	rep.Rows = rows
	return rep, d.check(ctx, &rep, decided, allDispatch, drained, reviews, killedAt, back)
}

// hourOf is the table row of a wall-clock moment: its simulated hour, or
// the drain row after the day.
func (d *day) hourOf(at time.Time) int {
	return min(max(int(d.simulated(at)/time.Hour), 0), 24)
}

// decided reads every decision with its request's creation, and the
// writes the provider received for its key.
func (d *day) decided(ctx context.Context) ([]settled, error) {
	rows, err := d.db.Query(ctx, `SELECT q.key, q.created_at, d.decided_at, d.verdict
		FROM decisions d JOIN requests q ON q.id = d.request_id ORDER BY d.decided_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	writes := objectsByKey(d.keyed.AllObjects())
	var out []settled
	for rows.Next() {
		var s settled
		if err := rows.Scan(&s.Key, &s.Created, &s.Decided, &s.Verdict); err != nil {
			return nil, err
		}
		s.Dispatched = writes[s.Key]
		slices.SortFunc(s.Dispatched, func(a, b time.Time) int { return a.Compare(b) })
		out = append(out, s)
	}
	return out, rows.Err()
}

// createdAt reads when each request was stored.
func (d *day) createdAt(ctx context.Context) (map[string]time.Time, error) {
	rows, err := d.db.Query(ctx, `SELECT id::text, created_at FROM requests`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at time.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		out[id] = at
	}
	return out, rows.Err()
}

// percentile is the p-th percentile of ds (nearest rank), 0 when empty.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[min(max(i, 0), len(s)-1)]
}

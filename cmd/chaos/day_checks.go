package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/bot"
)

// budgetWindow is the window Slack's per-channel budget is checked over:
// the fleet spaces posts to a channel a post interval apart, so a window
// holds at most window/interval of them, plus one for its edges and one
// for a post whose delivery was late (a busy machine delays a slot's post,
// never brings it forward).
const budgetWindow = 10 * time.Second

// check adds the day's checked figures to rep: nothing lost or run twice,
// one decision per request, dispatch latency under its bound, the queues
// drained after the peak and at the end, Slack's budget kept, and the
// replica killed at noon back.
func (d *day) check(ctx context.Context, rep *DayReport, decided []settled, dispatch []time.Duration,
	drained time.Duration, reviews map[string]int, killedAt, back time.Time) error {
	f := &rep.Figures
	lost, err := d.lostIntents(ctx)
	if err != nil {
		return err
	}
	f.check("acknowledged intents lost", lost, 0)
	keys := map[string]bool{}
	for _, in := range d.intents {
		keys[in.Key] = true
	}
	var stored int
	if err := d.db.QueryRow(ctx, `SELECT count(*) FROM requests`).Scan(&stored); err != nil {
		return err
	}
	f.check("requests stored beyond one per intent (replays)", stored-len(keys), 0)
	decisions, err := d.decisionsPerRequest(ctx)
	if err != nil {
		return err
	}
	f.Checked = append(f.Checked, decisions)

	notOnce, unapproved, approved := 0, 0, map[string]bool{}
	for _, s := range decided {
		if s.Verdict == "approve" {
			approved[s.Key] = true
			if len(s.Dispatched) != 1 {
				notOnce++
			}
		}
	}
	for key := range objectsByKey(d.keyed.AllObjects()) {
		if !approved[key] {
			unapproved++
		}
	}
	f.check("approved writes not run exactly once", notOnce, 0)
	f.check("writes run without an approval", unapproved, 0)

	p99 := percentile(dispatch, 99)
	f.Checked = append(f.Checked, Row{Name: "approval to dispatch p99 over the day", Value: p99.Round(time.Millisecond).String(),
		Want: "< " + d.opts.DispatchP99.String(), OK: p99 < d.opts.DispatchP99 && len(dispatch) > 0})
	worst, worstHour := time.Duration(0), ""
	for _, h := range rep.Rows {
		if h.DispatchP99 > worst {
			worst, worstHour = h.DispatchP99, h.Hour
		}
	}
	f.Checked = append(f.Checked, Row{Name: "approval to dispatch p99, worst hour", Value: fmt.Sprintf("%s (%s)", worst.Round(time.Millisecond), worstHour),
		Want: "< " + maxRecovery.String(), OK: worst < maxRecovery})

	var peakPending, peakOutbox int
	for _, h := range rep.Rows[:24] {
		peakPending, peakOutbox = max(peakPending, h.Pending), max(peakOutbox, h.Outbox)
	}
	var waits []time.Duration
	for _, h := range rep.Rows {
		waits = append(waits, h.cardWaits...)
	}
	// A card waits behind its channel's other posts, and a replica killed
	// while holding it keeps it until its outbox lease (wall time) runs
	// out: it must still reach Slack before the request expires, that
	// lease aside. The outbox likewise may hold no more than the channels
	// can post in that time.
	lease := d.simulated(d.start.Add(bot.DefaultLease))
	cardP99 := percentile(waits, 99)
	f.Checked = append(f.Checked, Row{Name: "card wait p99 over the day (intake to Slack)", Value: fmt.Sprintf("%.1fm", cardP99.Minutes()),
		Want: fmt.Sprintf("< request TTL + outbox lease (%.0fm)", (d.opts.RequestTTL + lease).Minutes()),
		OK:   cardP99 < d.opts.RequestTTL+lease && len(waits) > 0})
	postable := int(float64(d.opts.Channels) * float64(d.real(d.opts.RequestTTL)+bot.DefaultLease) / float64(bot.DefaultPostInterval))
	f.Checked = append(f.Checked, Row{Name: "outbox depth, the day's peak", Value: fmt.Sprint(peakOutbox),
		Want: fmt.Sprintf("<= %d (posts in that time)", postable), OK: peakOutbox <= postable})
	// After the afternoon peak the pending requests must come down to a
	// share (SettleShare) of their peak by the day's last hour.
	last := rep.Rows[23]
	f.Checked = append(f.Checked, Row{Name: "pending requests in the last hour (the day's peak)", Value: fmt.Sprintf("%d (%d)", last.Pending, peakPending),
		Want: fmt.Sprintf("<= %.0f%% of the peak", d.opts.SettleShare*100), OK: float64(last.Pending) <= d.opts.SettleShare*float64(peakPending)})
	f.Checked = append(f.Checked, Row{Name: "queues empty after the day", Value: drainValue(drained, d.opts.Drain),
		Want: "within " + d.opts.Drain.String(), OK: drained >= 0})

	most, channel := d.busiestWindow()
	allowed := int(budgetWindow/bot.DefaultPostInterval) + 2
	f.Checked = append(f.Checked, Row{Name: "most posts to one channel in " + budgetWindow.String(), Value: fmt.Sprintf("%d (%s)", most, channel),
		Want: fmt.Sprintf("<= %d", allowed), OK: most <= allowed})
	duplicateCards, duplicateReplies, cards := 0, 0, 0
	for c := range d.opts.Channels {
		byCard, byReply := d.postedByID(dayChannel(c))
		duplicateCards += duplicates(byCard)
		duplicateReplies += duplicates(byReply)
		cards += len(byCard)
	}
	f.check("duplicate cards", duplicateCards, 0)
	f.check("duplicate thread replies", duplicateReplies, 0)
	f.check("requests without a card", stored-cards, 0)
	killed := "none"
	if !killedAt.IsZero() {
		killed = "at " + clock(d.simulated(killedAt))
		if !back.IsZero() {
			killed += ", back at " + clock(d.simulated(back))
		}
	}
	f.Checked = append(f.Checked, Row{Name: "replica killed -9 at noon and back", Value: killed, Want: "both", OK: !killedAt.IsZero() && !back.IsZero()})

	f.note("intents acknowledged", "%d new, %d posts in all (replays by answer: %s)", len(keys), len(d.arrivals), answers(d.replays))
	f.note("reviews", "approve %d, reject %d, never looked at %d, too late (expired first) %d",
		reviews["approve"], reviews["reject"], reviews["never"], reviews["too late"])
	if n := reviews["unacknowledged"]; n > 0 {
		f.note("cards of posts the day's end cut off", "%d (stored, the answer never read; not reviewed)", n)
	}
	var expired int
	if err := d.db.QueryRow(ctx, `SELECT count(*) FROM requests WHERE status = 'expired'`).Scan(&expired); err != nil {
		return err
	}
	f.note("requests expired", "%d", expired)
	f.note("writes at the provider", "%d", d.keyed.Received())
	f.note("Slack calls", "%d (%d posts: %d cards, the rest thread replies)", len(d.slack.Calls("")), d.slack.Count("chat.postMessage"), cards)
	f.note("clicks answered 200 but not recorded", "%d (pressed again)", d.reclicks.Load())
	return nil
}

func drainValue(drained, limit time.Duration) string {
	if drained < 0 {
		return "not within " + limit.String()
	}
	return "after " + drained.Round(10*time.Millisecond).String()
}

// busiestWindow is the most posts (cards and thread replies) one channel
// received at the fake Slack within budgetWindow, and the channel.
func (d *day) busiestWindow() (int, string) {
	byChannel := map[string][]time.Time{}
	for _, c := range d.slack.Calls("chat.postMessage") {
		ch := c.Form.Get("channel")
		byChannel[ch] = append(byChannel[ch], c.At)
	}
	most, where := 0, ""
	for ch, ats := range byChannel {
		slices.SortFunc(ats, func(a, b time.Time) int { return a.Compare(b) })
		first := 0
		for i, at := range ats {
			for at.Sub(ats[first]) >= budgetWindow {
				first++
			}
			if n := i - first + 1; n > most {
				most, where = n, ch
			}
		}
	}
	return most, where
}

// answers prints replies counted by HTTP status, "200 ×43".
func answers(byStatus map[string]int) string {
	var out []string
	for status, n := range byStatus {
		out = append(out, fmt.Sprintf("%s ×%d", status, n))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/bot"
)

// minPostGap is the closest two posts to one channel may land at the
// fake Slack: the fleet's shared budget spaces them a second apart, less
// half a second of delivery jitter.
const minPostGap = bot.DefaultPostInterval / 2

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

	// The outbox may never hold more cards than the channels can post
	// before a request expires: beyond that, requests expire unseen. After
	// the afternoon peak the pending requests must come down to a quarter
	// of their peak by the day's last hour.
	var peakPending, peakOutbox int
	for _, h := range rep.Rows[:24] {
		peakPending, peakOutbox = max(peakPending, h.Pending), max(peakOutbox, h.Outbox)
	}
	postable := int(float64(d.opts.Channels) * float64(d.real(d.opts.RequestTTL)) / float64(bot.DefaultPostInterval))
	f.Checked = append(f.Checked, Row{Name: "outbox depth, the day's peak", Value: fmt.Sprint(peakOutbox),
		Want: fmt.Sprintf("<= %d (posts in a request TTL)", postable), OK: peakOutbox <= postable})
	last := rep.Rows[23]
	f.Checked = append(f.Checked, Row{Name: "pending requests in the last hour (the day's peak)", Value: fmt.Sprintf("%d (%d)", last.Pending, peakPending),
		Want: "<= peak/4", OK: last.Pending*4 <= peakPending})
	f.Checked = append(f.Checked, Row{Name: "queues empty after the day", Value: drainValue(drained, d.opts.Drain),
		Want: "within " + d.opts.Drain.String(), OK: drained >= 0})

	gap, channel := d.fastestPostGap()
	f.Checked = append(f.Checked, Row{Name: "closest posts to one channel", Value: fmt.Sprintf("%s (%s)", gap.Round(time.Millisecond), channel),
		Want: ">= " + minPostGap.String(), OK: gap >= minPostGap})
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

	f.note("intents acknowledged", "%d new, %d posts in all (replays %s)", len(keys), len(d.arrivals), fmt.Sprint(d.replays))
	f.note("reviews", "approve %d, reject %d, never looked at %d, too late (expired first) %d",
		reviews["approve"], reviews["reject"], reviews["never"], reviews["too late"])
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

// fastestPostGap is the shortest time between two posts (cards and thread
// replies) to one channel at the fake Slack, and the channel.
func (d *day) fastestPostGap() (time.Duration, string) {
	last := map[string]time.Time{}
	gap, where := time.Duration(1<<62), ""
	for _, c := range d.slack.Calls("chat.postMessage") {
		ch := c.Form.Get("channel")
		if prev, ok := last[ch]; ok && c.At.Sub(prev) < gap {
			gap, where = c.At.Sub(prev), ch
		}
		last[ch] = c.At
	}
	return gap, where
}

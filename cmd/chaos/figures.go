package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/fakeslack"
	"github.com/countersign/countersign/sandbox"
)

// maxRecovery is the most a fault may take to be recovered from.
const maxRecovery = 10 * time.Second

// maxOutageRecovery is the most a new write may take to succeed once the
// provider serves again after its outage.
const maxOutageRecovery = 20 * time.Second

// Row is one figure: its name, its value as printed, what it must be, and
// whether it is.
type Row struct {
	Name, Value, Want string
	OK                bool
}

// Figures are a run's checked figures and, beside them, what it did.
type Figures struct {
	Checked []Row
	Context []Row
}

// OK reports whether every checked figure is as it must be.
func (f Figures) OK() bool {
	for _, r := range f.Checked {
		if !r.OK {
			return false
		}
	}
	return len(f.Checked) > 0
}

// Table prints the figures.
func (f Figures) Table() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "figure\tvalue\tmust be\t")
	for _, r := range f.Checked {
		mark := "ok"
		if !r.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.Name, r.Value, r.Want, mark)
	}
	w.Flush()
	b.WriteString("\n")
	w = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range f.Context {
		fmt.Fprintf(w, "%s\t%s\n", r.Name, r.Value)
	}
	w.Flush()
	return b.String()
}

func (f *Figures) check(name string, value int, want int) {
	f.Checked = append(f.Checked, Row{Name: name, Value: fmt.Sprint(value), Want: fmt.Sprint(want), OK: value == want})
}

func (f *Figures) note(name, format string, args ...any) {
	f.Context = append(f.Context, Row{Name: name, Value: fmt.Sprintf(format, args...)})
}

// drain waits until no approved write is waiting or in flight, no
// callback is due and no Slack post waits, and returns how long that took (-1: not within Drain).
func (r *run) drain(ctx context.Context) time.Duration {
	start := time.Now()
	for time.Since(start) < r.opts.Drain {
		var open int
		err := r.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM executions WHERE state IN ('ready', 'claimed', 'unknown'))
			+ (SELECT count(*) FROM callbacks WHERE state = 'pending')
			+ (SELECT count(*) FROM outbox WHERE state = 'pending')`).Scan(&open)
		if err == nil && open == 0 {
			return time.Since(start)
		}
		r.openWork = r.describeOpenWork(ctx)
		time.Sleep(200 * time.Millisecond)
	}
	return -1
}

// replayPruned waits for retention to prune what settled, then sends every
// pruned intent again: each must answer 410, and none may run again.
func (r *run) replayPruned(ctx context.Context) {
	time.Sleep(retentionFor + time.Second)
	pruned := r.tombstones(ctx)
	for _, in := range r.intents {
		if _, ok := pruned[in.Key]; !ok {
			continue
		}
		if base := r.fleet.pick(); base != "" {
			status, answer := post(base, in.Token, in.Body)
			r.answer("replay of a pruned key", status, answer)
			r.replays[fmt.Sprintf("%d after the end", status)]++
			if status != http.StatusGone {
				r.ranAgain++
			}
		}
	}
	time.Sleep(2 * time.Second) // two dispatch sweeps, were anything to run
}

func (r *run) tombstones(ctx context.Context) map[string]time.Time {
	out := map[string]time.Time{}
	rows, err := r.db.Query(ctx, `SELECT key, pruned_at FROM tombstones`)
	if err != nil {
		r.fail(err)
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var at time.Time
		if rows.Scan(&k, &at) == nil {
			out[k] = at
		}
	}
	return out
}

// figures reads the database, the providers, the fake Slack and the agent
// to count what went wrong.
func (r *run) figures(ctx context.Context, drained time.Duration) (Figures, error) {
	var f Figures
	if err := r.failure(); err != nil {
		return f, err
	}
	lost, err := r.lostIntents(ctx)
	if err != nil {
		return f, err
	}
	f.check("acknowledged intents lost", lost, 0)
	if err := r.judge(ctx, &f); err != nil {
		return f, err
	}

	pruned := r.tombstones(ctx)
	dupEffects, ranAgain := 0, r.ranAgain
	for _, objects := range []map[string][]time.Time{objectsByKey(r.keyed.AllObjects()), objectsByKey(r.unkeyed.AllObjects())} {
		for key, ats := range objects {
			if len(ats) > 1 {
				dupEffects++
			}
			if at, ok := pruned[key]; ok && slices.ContainsFunc(ats, func(t time.Time) bool { return t.After(at) }) {
				ranAgain++
			}
		}
	}
	f.check("duplicate effects per key", dupEffects, 0)
	twice := 0
	for _, in := range r.intents {
		if in.Tool == "chaos.unkeyed" && r.unkeyed.Writes(in.Key) > 1 {
			twice++
		}
	}
	f.check("key-unaware writes sent twice", twice, 0)

	cards, replies := r.postedByID(slackChannel)
	f.check("duplicate cards", duplicates(cards), 0)
	f.check("duplicate replies", duplicates(replies), 0)

	decisions, err := r.decisionsPerRequest(ctx)
	if err != nil {
		return f, err
	}
	f.Checked = append(f.Checked, decisions)

	undelivered := 0
	rows, err := r.db.Query(ctx, `SELECT delivery_id::text, state FROM callbacks`)
	if err != nil {
		return f, err
	}
	callbacks := 0
	for rows.Next() {
		var id, state string
		if err := rows.Scan(&id, &state); err != nil {
			return f, err
		}
		callbacks++
		if state != "delivered" || !r.agent.received(id) {
			undelivered++
		}
	}
	rows.Close()
	// Pruning takes delivered callbacks' rows with it: the judge checks
	// every decided request's callbacks at the agent.
	f.check("callback rows left undelivered", undelivered, 0)
	f.check("keys that ran again after pruning (a replay not answered 410, or a write after the prune)", ranAgain, 0)

	worst, kills, terms := time.Duration(0), 0, 0
	byPhase := map[string]int{}
	outage := time.Duration(-1)
	for _, ft := range r.faults {
		if strings.HasPrefix(ft.What, outageFault) {
			// New writes wait behind the retries' backoff: bounded apart.
			outage = ft.Recovery
			continue
		}
		worst = max(worst, ft.Recovery)
		if strings.HasPrefix(ft.What, "kill") {
			kills++
		}
		if strings.HasPrefix(ft.What, "SIGTERM") {
			terms++
		}
		for _, p := range ft.Phases {
			byPhase[p]++
		}
	}
	f.Checked = append(f.Checked, Row{Name: "time to recover after a fault (max)", Value: worst.Round(10 * time.Millisecond).String(),
		Want: "< " + maxRecovery.String(), OK: worst < maxRecovery})
	if outage >= 0 {
		f.Checked = append(f.Checked, Row{Name: "time to serve a new write after the provider outage", Value: outage.Round(10 * time.Millisecond).String(),
			Want: "< " + maxOutageRecovery.String(), OK: outage < maxOutageRecovery})
	}
	f.Checked = append(f.Checked, Row{Name: "replicas killed (kill -9, SIGTERM)", Value: fmt.Sprintf("%d (%d, %d)", kills+terms, kills, terms),
		Want: fmt.Sprintf(">= %d, one SIGTERM", r.opts.MinKills), OK: kills+terms >= r.opts.MinKills && (terms > 0 || r.opts.Kills < 2)})
	f.Checked = append(f.Checked, Row{Name: "replicas sent SIGHUP that did not reload", Value: fmt.Sprintf("%d of %d", r.unreloaded, r.hupped),
		Want: "0 of at least 1", OK: r.unreloaded == 0 && r.hupped > 0})
	f.check("poisoned intents stored", r.stored, 0)
	unstable := 0
	for _, answers := range r.poisoned {
		if len(answers) > 1 {
			unstable++
		}
	}
	f.check("poison kinds answered with more than one code", unstable, 0)
	unsettled := 0
	if drained < 0 {
		if err := r.db.QueryRow(ctx, `SELECT count(*) FROM executions WHERE state IN ('ready', 'claimed', 'unknown')`).Scan(&unsettled); err != nil {
			return f, err
		}
	}
	f.check("approved writes left unsettled", unsettled, 0)

	var recoveries []string
	for _, ft := range r.faults {
		recoveries = append(recoveries, fmt.Sprintf("%s %s", ft.What, ft.Recovery.Round(10*time.Millisecond)))
	}
	f.note("recovery per fault", "%s", strings.Join(recoveries, "; "))
	var phaseList []string
	for _, p := range phases {
		phaseList = append(phaseList, fmt.Sprintf("%s %d", p, byPhase[p]))
	}
	f.note("in flight at the faults", "%s (%d faults in all)", strings.Join(phaseList, ", "), len(r.faults))
	f.note("intents acknowledged", "%d (%d left pending for reminders)", len(r.intents), count(r.intents, "wait"))
	var poisonList []string
	for kind, answers := range r.poisoned {
		for answer, n := range answers {
			poisonList = append(poisonList, fmt.Sprintf("%s: %s ×%d", kind, answer, n))
		}
	}
	sort.Strings(poisonList)
	f.note("poisoned intents", "%s", strings.Join(poisonList, "; "))
	r.answerFigures(&f)
	r.connLimitFigures(&f)
	f.note("replays by answer", "%v", r.replays)
	f.note("clicks answered 200 but not recorded", "%d (pressed again; the clicker is told to try again)", r.reclicks.Load())
	unusual := map[string]int{}
	for _, c := range r.slack.Calls("chat.postEphemeral") {
		// "You approved…", "Already approved by…" are the usual answers.
		if t := c.Form.Get("text"); !strings.HasPrefix(t, "You ") && !strings.HasPrefix(t, "Already ") {
			unusual[t]++
		}
	}
	for t, n := range unusual {
		f.note("an unusual answer to a click", "×%d %s", n, t)
	}
	for _, rep := range r.fleet.replicas {
		for _, line := range rep.refused() {
			f.note("a click refused, in "+rep.name+"'s log", "%s", line)
		}
	}
	f.note("writes at the providers", "key-aware %d (objects %d), key-unaware %d", r.keyed.Received(), r.keyed.Objects(), r.unkeyed.Received())
	f.note("cards, thread replies", "%d, %d", len(cards), len(replies))
	f.note("callbacks", "%d rows left (the rest pruned), %d deliveries answered 500 by the agent", callbacks, r.agent.failures())
	f.note("requests pruned", "%d", len(pruned))
	var outbox int
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&outbox); err != nil {
		return f, err
	}
	f.check("Slack posts (cards, replies) still unsent after the drain", outbox, 0)
	if drained >= 0 {
		f.note("time to settle after the load", "%s", drained.Round(10*time.Millisecond))
	} else {
		f.note("time to settle after the load", "not within %s; at its end: %s", r.opts.Drain, r.openWork)
	}
	return f, nil
}

// lostIntents counts the acknowledged intents whose key the database
// does not hold, as a request or as a pruned request's tombstone.
func (r *run) lostIntents(ctx context.Context) (int, error) {
	known := map[string]bool{}
	rows, err := r.db.Query(ctx, `SELECT key FROM requests UNION ALL SELECT key FROM tombstones`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return 0, err
		}
		known[k] = true
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	lost := 0
	for _, in := range r.intents {
		if !known[in.Key] {
			lost++
		}
	}
	return lost, nil
}

// decisionsPerRequest checks that every request a human approved or
// rejected was decided exactly once, by its audit events.
func (r *run) decisionsPerRequest(ctx context.Context) (Row, error) {
	decided := map[string]int{}
	rows, err := r.db.Query(ctx, `SELECT request_id::text, count(*) FROM events WHERE kind = 'decided' GROUP BY 1`)
	if err != nil {
		return Row{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return Row{}, err
		}
		decided[id] = n
	}
	if err := rows.Err(); err != nil {
		return Row{}, err
	}
	lo, hi := -1, 0
	for _, in := range r.intents {
		if in.Verdict != "approve" && in.Verdict != "reject" {
			continue
		}
		n := decided[in.ID]
		if lo < 0 || n < lo {
			lo = n
		}
		hi = max(hi, n)
	}
	value := fmt.Sprint(lo)
	if lo != hi {
		value = fmt.Sprintf("%d to %d", lo, hi)
	}
	return Row{Name: "decisions per decided request", Value: value, Want: "1", OK: lo == 1 && hi == 1}, nil
}

// postedByID counts each card and thread reply in channel by its
// countersign metadata: more than one is a duplicate.
func (r *run) postedByID(channel string) (cards map[string]int, replies map[string]int) {
	cards, replies = map[string]int{}, map[string]int{}
	for _, m := range r.slack.Messages(channel) {
		cards[metadataID(m, bot.CardEventType, "key", "round")]++
		for _, reply := range r.slack.Replies(channel, m.TS) {
			replies[metadataID(reply, bot.ReplyEventType, "outbox_id")]++
		}
	}
	return cards, replies
}

func objectsByKey(objects []sandbox.Object) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, o := range objects {
		out[o.Key] = append(out[o.Key], o.At)
	}
	return out
}

// metadataID names a message by its countersign metadata's fields; a
// message without it is named by its ts, so it counts once.
func metadataID(m fakeslack.Message, eventType string, fields ...string) string {
	var md struct {
		EventType    string         `json:"event_type"`
		EventPayload map[string]any `json:"event_payload"`
	}
	if json.Unmarshal(m.Metadata, &md) != nil || md.EventType != eventType {
		return "ts " + m.TS
	}
	id := eventType
	for _, f := range fields {
		id += fmt.Sprintf(" %v", md.EventPayload[f])
	}
	return id
}

func duplicates(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		if c > 1 {
			n++
		}
	}
	return n
}

func count(intents []*intent, verdict string) int {
	n := 0
	for _, in := range intents {
		if in.Verdict == verdict {
			n++
		}
	}
	return n
}

// describeOpenWork says what the fleet has not settled yet: executions by
// state, and due callbacks with their attempts and when the next one is.
func (r *run) describeOpenWork(ctx context.Context) string {
	var execs, callbacks string
	_ = r.db.QueryRow(ctx, `SELECT coalesce(string_agg(state || ' ' || n, ', '), 'none') FROM
		(SELECT state, count(*) AS n FROM executions WHERE state IN ('ready', 'claimed', 'unknown') GROUP BY state) s`).Scan(&execs)
	_ = r.db.QueryRow(ctx, `SELECT count(*) || ' (most attempts ' || coalesce(max(attempts), 0) || ', next in up to '
		|| coalesce(round(extract(epoch FROM max(next_attempt_at) - now())::numeric, 1), 0) || 's)'
		FROM callbacks WHERE state = 'pending'`).Scan(&callbacks)
	var posts int
	_ = r.db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&posts)
	return fmt.Sprintf("executions %s; callbacks pending %s; Slack posts pending %d", execs, callbacks, posts)
}

// connLimitFigures checks the connection-limit fault bit: backends cut,
// answers refused 503 unavailable while the role could not connect.
func (r *run) connLimitFigures(f *Figures) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ft := range r.faults {
		if strings.HasPrefix(ft.What, connLimitFault) {
			// Agents post every few tens of milliseconds: some reach a
			// replica while it cannot connect, or the fault did not bite.
			f.Checked = append(f.Checked, Row{Name: "answers 503 unavailable while the fleet's role could not connect", Value: fmt.Sprint(r.connRefused),
				Want: ">= 1", OK: r.connRefused >= 1})
			f.note("the connection-limit fault", "%d backends cut, %d answers 503 unavailable while the role could not connect, recovered %s after it was lifted",
				r.connCut, r.connRefused, ft.Recovery.Round(10*time.Millisecond))
		}
	}
}

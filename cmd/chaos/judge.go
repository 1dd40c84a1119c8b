package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/sandbox"
)

// maxSameKeySends bounds the writes one key-aware intent may send under its
// key: the tools' max_attempts.
const maxSameKeySends = 20

// providerWrite is one write request as it reached a provider: what the
// provider itself saw, whatever countersign recorded about it.
type providerWrite struct {
	Key  string
	Body []byte
	At   time.Time
}

// writeLog records every write a provider receives before the provider
// handles it: the judge of what countersign sent.
type writeLog struct {
	next http.Handler

	mu     sync.Mutex
	writes []providerWrite
}

func (l *writeLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			return
		}
		l.mu.Lock()
		l.writes = append(l.writes, providerWrite{Key: r.Header.Get("Idempotency-Key"), Body: body, At: time.Now()})
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	l.next.ServeHTTP(w, r)
}

// byKey returns the writes received, by Idempotency-Key.
func (l *writeLog) byKey() map[string][]providerWrite {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]providerWrite{}
	for _, w := range l.writes {
		out[w.Key] = append(out[w.Key], w)
	}
	return out
}

func (l *writeLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.writes)
}

// expectedSnapshot is the canonical (RFC 8785) form of a valid intent's
// effect, written out here by hand rather than by the code under test: the
// exact bytes an approval of that intent lets reach the provider.
func expectedSnapshot(body string) []byte {
	var in struct {
		Effect struct {
			Invoice     string      `json:"invoice"`
			AmountCents json.Number `json:"amount_cents"`
			Currency    string      `json:"currency"`
		} `json:"effect"`
	}
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	if d.Decode(&in) != nil {
		return nil
	}
	e := in.Effect
	return fmt.Appendf(nil, `{"amount_cents":%s,"currency":"%s","invoice":"%s"}`, e.AmountCents, e.Currency, e.Invoice)
}

func payloadHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ledgerView is what the database says of every intent at the end: the
// decisions and votes in its audit trail (which outlives pruning), and each
// key's final state.
type ledgerView struct {
	decided map[string][]string       // request id → verdicts of its "decided" events
	voted   map[string]map[string]int // request id → voter → "voted" events
	final   map[string]string         // key → succeeded, failed, needs_review, rejected, pending…
}

func (r *run) readLedger(ctx context.Context) (ledgerView, error) {
	v := ledgerView{decided: map[string][]string{}, voted: map[string]map[string]int{}, final: map[string]string{}}
	rows, err := r.db.Query(ctx, `SELECT request_id::text, kind, actor, coalesce(data->>'verdict', '') FROM events WHERE kind IN ('decided', 'voted')`)
	if err != nil {
		return v, err
	}
	for rows.Next() {
		var id, kind, actor, verdict string
		if err := rows.Scan(&id, &kind, &actor, &verdict); err != nil {
			rows.Close()
			return v, err
		}
		if kind == "decided" {
			v.decided[id] = append(v.decided[id], verdict)
			continue
		}
		if v.voted[id] == nil {
			v.voted[id] = map[string]int{}
		}
		v.voted[id][actor]++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return v, err
	}
	// A request's final state is its execution's when it was approved.
	rows, err = r.db.Query(ctx, `SELECT q.key, CASE WHEN q.status = 'approved' THEN coalesce(e.state, 'approved') ELSE q.status END
		FROM requests q LEFT JOIN LATERAL (SELECT state FROM executions WHERE request_id = q.id ORDER BY id DESC LIMIT 1) e ON true
		UNION ALL SELECT key, status FROM tombstones`)
	if err != nil {
		return v, err
	}
	defer rows.Close()
	for rows.Next() {
		var key, state string
		if err := rows.Scan(&key, &state); err != nil {
			return v, err
		}
		v.final[key] = state
	}
	return v, rows.Err()
}

// judge checks every acknowledged intent against what the providers
// received: an approved intent's write reached its provider under exactly
// its key with exactly the approved bytes (a key-unaware one once ever, a
// key-aware one at least once and at most maxSameKeySends times), and it
// settled as the provider says (succeeded, or failed where the provider was
// told to refuse it); an intent not approved sent nothing; and no write
// reached a provider under a key the ledger has no approval for.
func (r *run) judge(ctx context.Context, f *Figures) error {
	ledger, err := r.readLedger(ctx)
	if err != nil {
		return err
	}
	keyed, unkeyed := r.keyedLog.byKey(), r.unkeyedLog.byKey()
	approvedKeys := map[string]bool{}
	var missing, wrongBytes, unapproved, unkeyedTwice, misdecided, missettled, hashOff int
	var examples []string
	example := func(format string, args ...any) {
		if len(examples) < 6 {
			examples = append(examples, fmt.Sprintf(format, args...))
		}
	}
	mostSends, resentKeys := 0, 0
	for _, in := range r.intents {
		want := expectedSnapshot(in.Body)
		if payloadHash(want) != in.PayloadHash {
			hashOff++
			example("%s acknowledged with payload hash %s, not that of its effect", in.Key, in.PayloadHash)
		}
		verdicts := ledger.decided[in.ID]
		approved := len(verdicts) > 0 && verdicts[0] == "approve"
		switch {
		case in.Verdict == "approve" && !approved, in.Verdict == "reject" && (len(verdicts) == 0 || verdicts[0] != "reject"),
			in.Verdict == "wait" && len(verdicts) > 0:
			misdecided++
			example("%s was clicked %q; the ledger's decisions: %v", in.Key, in.Verdict, verdicts)
		}
		own, other := keyed, unkeyed
		if in.Tool == "chaos.unkeyed" {
			own, other = unkeyed, keyed
		}
		writes := own[in.Key]
		if len(other[in.Key]) > 0 {
			unapproved += len(other[in.Key])
			example("%s was written to the other tool's provider", in.Key)
		}
		if !approved {
			if len(writes) > 0 {
				unapproved += len(writes)
				example("%s (%s, not approved) reached the provider %d times", in.Key, in.Verdict, len(writes))
			}
			continue
		}
		approvedKeys[in.Key] = true
		if len(writes) == 0 {
			missing++
			example("%s was approved (final state %q) and never reached the provider", in.Key, ledger.final[in.Key])
		}
		for _, w := range writes {
			if !bytes.Equal(w.Body, want) {
				wrongBytes++
				example("%s reached the provider as %s, approved as %s", in.Key, compact(w.Body), want)
			}
		}
		if in.Tool == "chaos.unkeyed" && len(writes) > 1 {
			unkeyedTwice++
			example("key-unaware %s reached the provider %d times", in.Key, len(writes))
		}
		if in.Tool == "chaos.keyed" && len(writes) > 1 {
			resentKeys++
		}
		mostSends = max(mostSends, len(writes))
		wantFinal := "succeeded"
		if r.refusing(in.Key) {
			wantFinal = "failed"
		}
		if got := ledger.final[in.Key]; got != wantFinal && len(writes) > 0 {
			missettled++
			example("%s settled %q; the provider says %q", in.Key, got, wantFinal)
		}
	}
	// Writes under keys no acknowledged intent was approved under (a key
	// altered on the way, an intent never acknowledged).
	for _, log := range []map[string][]providerWrite{keyed, unkeyed} {
		for key, ws := range log {
			if !approvedKeys[key] && !r.acknowledgedKey(key) {
				unapproved += len(ws)
				example("%d writes under %q, a key no intent was approved under", len(ws), key)
			}
		}
	}
	f.check("approved intents whose write never reached the provider", missing, 0)
	f.check("writes with bytes other than the approved ones", wrongBytes, 0)
	f.check("writes without an approval in the ledger", unapproved, 0)
	f.check("key-unaware intents written more than once", unkeyedTwice, 0)
	f.Checked = append(f.Checked, Row{Name: "same-key sends of one key-aware intent (most)", Value: fmt.Sprint(mostSends),
		Want: fmt.Sprintf("<= %d", maxSameKeySends), OK: mostSends <= maxSameKeySends})
	f.check("approved writes settled otherwise than the provider says", missettled, 0)
	f.check("decisions other than the clicks", misdecided, 0)
	f.check("acknowledged payload hashes not of the effect sent", hashOff, 0)
	f.note("writes received by the providers", "key-aware %d, key-unaware %d; %d key-aware keys resent under the same key; %d writes refused as told",
		r.keyedLog.count(), r.unkeyedLog.count(), resentKeys, r.refusals())
	sort.Strings(examples)
	for _, e := range examples {
		f.note("judged wrong", "%s", e)
	}
	r.judgeCallbacks(f, ledger)
	r.judgeClicks(f, ledger)
	r.judgeWaiters(f, ledger)
	return nil
}

func (r *run) acknowledgedKey(key string) bool {
	for _, in := range r.intents {
		if in.Key == key {
			return true
		}
	}
	return false
}

// refuse tells the key-aware provider to refuse key's write for good: the
// one case where an approved intent may end failed.
func (r *run) refuse(key string) {
	r.mu.Lock()
	r.refused[key] = true
	r.mu.Unlock()
	r.keyed.SetFor(key, refusal)
}

func (r *run) refusing(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused[key]
}

func (r *run) refusals() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.refused)
}

// judgeCallbacks checks that every decided intent's agent heard, in a
// callback it answered 2xx, the state the ledger settled it in, and never
// a settled state other than that one.
func (r *run) judgeCallbacks(f *Figures, ledger ledgerView) {
	unheard, wrong := 0, 0
	for _, in := range r.intents {
		if in.Verdict != "approve" && in.Verdict != "reject" {
			continue
		}
		final := ledger.final[in.Key]
		heard := r.agent.outcomes(in.ID)
		if !heard[final] {
			unheard++
			if unheard <= 3 {
				f.note("a callback missing", "%s settled %q; the agent heard %v", in.Key, final, heard)
			}
		}
		for state := range heard {
			if settledState(state) && state != final {
				wrong++
				f.note("a callback wrong", "%s settled %q; a callback said %q", in.Key, final, state)
			}
		}
	}
	f.check("decided intents whose final state no callback delivered", unheard, 0)
	f.check("callbacks delivering a settled state other than the final one", wrong, 0)
}

func settledState(s string) bool {
	switch s {
	case "succeeded", "failed", "rejected", "expired", "cancelled":
		return true
	}
	return false
}

// judgeClicks checks every click answered as recorded ("You approved…",
// "You already approved…") against the ledger's votes.
func (r *run) judgeClicks(f *Figures, ledger ledgerView) {
	byShort := map[string]*intent{}
	for _, in := range r.intents {
		byShort[shortKey(in.Key)] = in
	}
	unrecorded, answered := 0, 0
	for _, c := range r.slack.Calls("chat.postEphemeral") {
		text, user := c.Form.Get("text"), c.Form.Get("user")
		if !strings.HasPrefix(text, "You ") {
			continue
		}
		start := strings.Index(text, "`")
		end := strings.LastIndex(text, "`")
		if start < 0 || end <= start {
			continue
		}
		in := byShort[text[start+1:end]]
		if in == nil {
			continue
		}
		answered++
		if ledger.voted[in.ID][user] == 0 {
			unrecorded++
			f.note("a click answered recorded", "%s %s: %q, and the ledger has no vote of theirs", in.Key, user, text)
		}
	}
	f.check("clicks answered recorded but not in the ledger", unrecorded, 0)
	f.note("clicks answered recorded", "%d", answered)
}

// shortKey is the form people see (and a click's answer names): the first
// 12 characters, an ellipsis, the last 4.
func shortKey(key string) string {
	if len(key) <= 16 {
		return key
	}
	return key[:12] + "…" + key[len(key)-4:]
}

// refusal is how the key-aware provider declines a write it was told to
// refuse: a final answer, so the execution must end failed.
var refusal = sandbox.Behavior{Status: http.StatusPaymentRequired, Code: "card_declined"}

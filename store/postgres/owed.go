package postgres

import (
	"context"

	"github.com/countersign/countersign/store"
)

// owedRows is what a batch's rows owe (store.Owed) as parallel arrays for
// unnest: each event, outbox row and callback carries the position (ord,
// from 1) of the input row it belongs to, and the statement joins it to
// the row that input moved.
type owedRows struct {
	evOrd                   []int64
	evActor, evKind, evData []string
	obOrd                   []int64
	obKind, obData          []string
	obCoalesce              []bool
	cbOrd                   []int64
	cbEvent                 []string
	wakeChange, wakeReady   []bool
}

func flatten(owed []store.Owed) (owedRows, error) {
	// Sized first: a batch's arrays are built once, not regrown per row.
	var events, outbox, callbacks int
	for _, w := range owed {
		events, outbox, callbacks = events+len(w.Events), outbox+len(w.Outbox), callbacks+len(w.Callbacks)
	}
	o := owedRows{
		evOrd: make([]int64, 0, events), evActor: make([]string, 0, events),
		evKind: make([]string, 0, events), evData: make([]string, 0, events),
		obOrd: make([]int64, 0, outbox), obKind: make([]string, 0, outbox), obData: make([]string, 0, outbox),
		obCoalesce: make([]bool, 0, outbox),
		cbOrd:      make([]int64, 0, callbacks), cbEvent: make([]string, 0, callbacks),
		wakeChange: make([]bool, len(owed)), wakeReady: make([]bool, len(owed)),
	}
	for i, w := range owed {
		ord := int64(i + 1)
		for _, ev := range w.Events {
			data, err := encode(ev.Data)
			if err != nil {
				return owedRows{}, err
			}
			o.evOrd, o.evActor, o.evKind, o.evData = append(o.evOrd, ord), append(o.evActor, ev.Actor), append(o.evKind, string(ev.Kind)), append(o.evData, data)
		}
		for _, r := range w.Outbox {
			data, err := encode(r.Data)
			if err != nil {
				return owedRows{}, err
			}
			o.obOrd, o.obKind, o.obData = append(o.obOrd, ord), append(o.obKind, string(r.Kind)), append(o.obData, data)
			o.obCoalesce = append(o.obCoalesce, r.Coalesce)
		}
		for _, c := range w.Callbacks {
			o.cbOrd, o.cbEvent = append(o.cbOrd, ord), append(o.cbEvent, string(c))
		}
		o.wakeChange[i], o.wakeReady[i] = w.WakeChange, w.WakeReady
	}
	return o, nil
}

// owedByKey is what a batch of new requests owes as parallel arrays for
// unnest, each row naming its request by key: insert_requests joins them
// to the rows it inserted, which carry no input position.
type owedByKey struct {
	evKey, evActor, evKind, evData []string
	obKey, obKind, obData          []string
}

// flattenByKey is flatten for the requests ps, each row naming its request
// by key; a key given twice owes once, what its first request owes.
func flattenByKey(ps []store.NewRequest, owed []store.Owed) (owedByKey, error) {
	firsts := make([]store.Owed, len(owed))
	seen := make(map[string]bool, len(ps))
	for i, p := range ps {
		if !seen[p.Key] {
			seen[p.Key], firsts[i] = true, owed[i]
		}
	}
	o, err := flatten(firsts)
	if err != nil {
		return owedByKey{}, err
	}
	keysOf := func(ords []int64) []string {
		keys := make([]string, len(ords))
		for i, ord := range ords {
			keys[i] = ps[ord-1].Key
		}
		return keys
	}
	return owedByKey{
		evKey: keysOf(o.evOrd), evActor: o.evActor, evKind: o.evKind, evData: o.evData,
		obKey: keysOf(o.obOrd), obKind: o.obKind, obData: o.obData,
	}, nil
}

// Notify queues the wake-ups as NOTIFYs, which PostgreSQL delivers to every
// listener (this process's Listener among them) when the transaction
// commits, and drops if it rolls back.
func (e executor) Notify(ctx context.Context, w store.Wakeups) error {
	err := e.later(ctx, q.Get("notify"), channelChange, w.Changed, channelReady, w.Ready)
	return wrap("notifying", err)
}

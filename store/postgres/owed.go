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
	cbOrd                   []int64
	cbEvent                 []string
	wakeChange, wakeReady   []bool
}

func flatten(owed []store.Owed) (owedRows, error) {
	o := owedRows{
		evOrd: []int64{}, evActor: []string{}, evKind: []string{}, evData: []string{},
		obOrd: []int64{}, obKind: []string{}, obData: []string{},
		cbOrd: []int64{}, cbEvent: []string{},
		wakeChange: make([]bool, len(owed)), wakeReady: make([]bool, len(owed)),
	}
	for i, w := range owed {
		ord := int64(i + 1)
		for _, ev := range w.Events {
			data, err := encode(ev.Data)
			if err != nil {
				return owedRows{}, err
			}
			o.evOrd, o.evActor, o.evKind, o.evData = append(o.evOrd, ord), append(o.evActor, ev.Actor), append(o.evKind, ev.Kind), append(o.evData, data)
		}
		for _, r := range w.Outbox {
			data, err := encode(r.Data)
			if err != nil {
				return owedRows{}, err
			}
			o.obOrd, o.obKind, o.obData = append(o.obOrd, ord), append(o.obKind, string(r.Kind)), append(o.obData, data)
		}
		for _, c := range w.Callbacks {
			o.cbOrd, o.cbEvent = append(o.cbOrd, ord), append(o.cbEvent, string(c))
		}
		o.wakeChange[i], o.wakeReady[i] = w.WakeChange, w.WakeReady
	}
	return o, nil
}

// Notify queues the wake-ups as NOTIFYs, which PostgreSQL delivers to every
// listener (this process's Listener among them) when the transaction
// commits, and drops if it rolls back.
func (e executor) Notify(ctx context.Context, w store.Wakeups) error {
	_, err := e.db.Exec(ctx, q.Get("notify"), channelChange, w.Changed, channelReady, w.Ready)
	return wrap("notifying", err)
}

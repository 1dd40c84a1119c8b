package surface_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
	"github.com/countersign/countersign/surface/surfacetest"
)

var previewSecret = []byte("preview-secret")

// fakePreviews is a tool's preview endpoint on 127.0.0.1: it checks every
// call's signature as a provider checks a dispatch's, and answers by the
// effect's "mode".
type fakePreviews struct {
	*httptest.Server
	mu       sync.Mutex
	calls    map[string]int // by key
	unsigned int
	release  chan struct{} // the slow mode's answer waits for it
}

func newFakePreviews(t *testing.T) *fakePreviews {
	f := &fakePreviews{calls: map[string]int{}, release: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() { close(f.release); f.Close() })
	return f
}

func (f *fakePreviews) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if err := client.VerifyRequest(previewSecret, r, body, 5*time.Minute); err != nil || r.URL.Path != "/preview" {
		f.mu.Lock()
		f.unsigned++
		f.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var in struct {
		Tool   string `json:"tool"`
		Key    string `json:"key"`
		Effect struct {
			Mode    string `json:"mode"`
			Invoice string `json:"invoice"`
		} `json:"effect"`
	}
	if err := json.Unmarshal(body, &in); err != nil || in.Key != r.Header.Get("Idempotency-Key") {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls[in.Key]++
	f.mu.Unlock()
	switch in.Effect.Mode {
	case "changes":
		fmt.Fprintf(w, `{"changes": [{"field": "balance_cents", "before": 1000, "after": 5200}, {"field": "status", "before": "open", "after": "credited"}, {"field": "note", "after": "inv %s"}]}`, in.Effect.Invoice)
	case "summary":
		fmt.Fprint(w, `{"summary": "Closes ticket T-\u202e1 and notifies the customer"}`)
	case "error":
		http.Error(w, "boom", http.StatusInternalServerError)
	case "badjson":
		fmt.Fprint(w, `{"changes": [{"field": "a", "before": 1, "after": 2}`)
	case "toobig":
		fmt.Fprintf(w, `{"summary": "%s"}`, strings.Repeat("x", surface.MaxPreviewBody))
	case "toomany":
		changes := make([]string, surface.MaxPreviewChanges+1)
		for i := range changes {
			changes[i] = fmt.Sprintf(`{"field": "f%d", "before": 0, "after": 1}`, i)
		}
		fmt.Fprintf(w, `{"changes": [%s]}`, strings.Join(changes, ","))
	case "slow":
		select {
		case <-r.Context().Done():
		case <-f.release:
		case <-time.After(10 * time.Second):
		}
		fmt.Fprint(w, `{"summary": "too late"}`)
	default:
		fmt.Fprint(w, `{"changes": []}`)
	}
}

func (f *fakePreviews) callsOf(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[key]
}

// previewTools is review's side: one tool "t" whose preview is f's.
type previewTools struct{ ep *approvals.PreviewEndpoint }

func (p previewTools) Tool(name string) (approvals.Tool, bool) {
	return approvals.Tool{Name: name, Preview: p.ep}, true
}

func (previewTools) Approvers(store.Request) []string { return nil }

// posting records the View each card was posted with, and when.
type posting struct {
	*surfacetest.Memory
	mu    sync.Mutex
	views map[string]surface.View // by key
	at    map[string]time.Time
}

func newPosting(name string) *posting {
	return &posting{Memory: surfacetest.New(name), views: map[string]surface.View{}, at: map[string]time.Time{}}
}

func (p *posting) Post(ctx context.Context, dest string, v surface.View) (string, error) {
	p.mu.Lock()
	p.views[v.Request.Key], p.at[v.Request.Key] = v, time.Now()
	p.mu.Unlock()
	return p.Memory.Post(ctx, dest, v)
}

func (p *posting) posted(key string) (surface.View, time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.views[key]
	return v, p.at[key], ok
}

const previewTimeout = time.Second

func insertWith(t *testing.T, s store.Store, key, effect string) store.Request {
	t.Helper()
	req, inserted, err := s.InsertRequest(context.Background(), store.NewRequest{
		Key: key, BasisHash: "sha256:" + key, RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(effect), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
	})
	if err != nil || !inserted {
		t.Fatalf("InsertRequest(%s) = %v, %v", key, inserted, err)
	}
	return req
}

// deliverUntil runs the deliverers' polls until done holds, for at most
// 20 seconds.
func deliverUntil(t *testing.T, done func() bool, ds ...*surface.Deliverer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatal("the cards were not all posted")
		}
		var wg sync.WaitGroup
		for _, d := range ds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := d.RunOnce(context.Background()); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}

// Each card shows its write's preview, signed and fetched once, and no card
// waits for a preview longer than its tool's timeout: a preview that fails
// (500, bad JSON, too big, too many changes) or is slow posts its card
// saying the preview is unavailable, within the timeout and a second of
// the delivery's start, and the previews of one batch are asked at once.
func TestCardsShowThePreviewWithinItsTimeout(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := drv.Open(t, true)
		fake := newFakePreviews(t)
		ep := &approvals.PreviewEndpoint{URL: fake.URL + "/preview", Timeout: previewTimeout, Secrets: [][]byte{[]byte("old"), previewSecret}}
		modes := []string{"slow", "changes", "summary", "error", "badjson", "toobig", "toomany"}
		reqs := map[string]store.Request{}
		for _, mode := range modes {
			reqs[mode] = insertWith(t, b, "wa_preview_"+mode, `{"invoice":"inv_1","mode":"`+mode+`"}`)
		}
		slack := newPosting("slack")
		d := surface.New(surface.Config{Ledger: b, Tools: previewTools{ep}, Adapters: []surface.Adapter{slack},
			PostInterval: -1, Previews: previewhttp.New()})
		t.Cleanup(func() { _ = d.Stop(context.Background()) })

		start := time.Now()
		deliverUntil(t, func() bool { return slack.Cards() == len(modes) }, d)
		for _, mode := range modes {
			v, at, ok := slack.posted(reqs[mode].Key)
			if !ok {
				t.Fatalf("%s: no card", mode)
			}
			took := at.Sub(start)
			t.Logf("%s: card posted %s after the delivery began", mode, took.Round(time.Millisecond))
			if took > previewTimeout+time.Second {
				t.Errorf("%s: the card was posted %s after the delivery began; want within %s", mode, took, previewTimeout+time.Second)
			}
			c := v.Change()
			if !c.Wanted {
				t.Errorf("%s: the card does not show a preview", mode)
			}
			switch mode {
			case "changes":
				want := []surface.ChangeLine{{"balance_cents", "1000", "5200"}, {"status", "open", "credited"}, {"note", "(none)", "inv inv_1"}}
				if c.Unavailable || fmt.Sprint(c.Lines) != fmt.Sprint(want) {
					t.Errorf("changes shown = %+v; want %v", c, want)
				}
			case "summary":
				if c.Unavailable || !strings.HasPrefix(c.Summary, "Closes ticket") || len(c.Findings) != 1 || c.Findings[0].Pointer != "preview/summary" {
					t.Errorf("summary shown = %+v; want it with its bidirectional control flagged", c)
				}
			default:
				if !c.Unavailable {
					t.Errorf("%s: shown %+v; want the preview unavailable", mode, c)
				}
			}
			if n := fake.callsOf(reqs[mode].Key); n != 1 {
				t.Errorf("%s: the preview was asked %d times; want once", mode, n)
			}
		}
		if fake.unsigned != 0 {
			t.Errorf("%d preview calls had a bad signature", fake.unsigned)
		}

		// What stands is stored with the request.
		ctx := context.Background()
		for mode, want := range map[string]string{
			"changes": "ready:", "summary": "ready:", "error": "failed:the preview endpoint answered 500",
			"badjson": "failed:the answer is not JSON", "toobig": "failed:the answer is larger than 64 KiB",
			"toomany": "failed:the answer lists 101 changes", "slow": "failed:the preview endpoint did not answer within 1s",
		} {
			deadline := time.Now().Add(5 * time.Second)
			for {
				p, err := b.PreviewFor(ctx, reqs[mode].ID)
				got := string(p.State) + ":" + p.Reason
				if err == nil && strings.HasPrefix(got, want) {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: stored %q, %v; want %q", mode, got, err, want)
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}

// A request whose tool's cards go to two surfaces, delivered by two
// replicas, has its preview asked once: the ledger's claim is
// first-writer-wins, and every card shows the one answer.
func TestPreviewIsAskedOnceAcrossSurfacesAndReplicas(t *testing.T) {
	t.Parallel()
	b := drivertest.Postgres.Open(t, true)
	fake := newFakePreviews(t)
	ep := &approvals.PreviewEndpoint{URL: fake.URL + "/preview", Timeout: previewTimeout, Secrets: [][]byte{previewSecret}}
	var keys []string
	for i := range 6 {
		keys = append(keys, insertWith(t, b, fmt.Sprintf("wa_preview_once_%d", i), `{"invoice":"inv_`+fmt.Sprint(i)+`","mode":"changes"}`).Key)
	}
	var replicas []*surface.Deliverer
	var surfaces []*posting
	for range 2 {
		a, c := newPosting("slack"), newPosting("email")
		surfaces = append(surfaces, a, c)
		d := surface.New(surface.Config{Ledger: b, Tools: previewTools{ep}, Adapters: []surface.Adapter{a, c},
			PostInterval: -1, Previews: previewhttp.New(), Batch: 2})
		t.Cleanup(func() { _ = d.Stop(context.Background()) })
		replicas = append(replicas, d)
	}
	cards := func() int {
		n := 0
		for _, s := range surfaces {
			n += s.Cards()
		}
		return n
	}
	deliverUntil(t, func() bool { return cards() == 2*len(keys) }, replicas...)
	for _, key := range keys {
		if n := fake.callsOf(key); n != 1 {
			t.Errorf("%s: the preview was asked %d times; want once", key, n)
		}
		shown := 0
		for _, s := range surfaces {
			if v, _, ok := s.posted(key); ok {
				if c := v.Change(); c.Unavailable || len(c.Lines) != 3 {
					t.Errorf("%s on %s: %+v; want the three changes", key, s.Name(), c)
				}
				shown++
			}
		}
		if shown != 2 {
			t.Errorf("%s: %d cards; want one per surface", key, shown)
		}
	}
}

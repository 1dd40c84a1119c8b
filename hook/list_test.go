package hook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// page is an answer of GET /v1/requests, its requests kept as sent.
type page struct {
	Data       []json.RawMessage `json:"data"`
	NextCursor *string           `json:"next_cursor"`
}

// list GETs /v1/requests with query as token, and fails the test unless it
// answers 200.
func (b *bundle) list(t *testing.T, token, query string) page {
	t.Helper()
	r := b.do(t, http.MethodGet, "/v1/requests?"+query, token, nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET /v1/requests?%s = %d %s", query, r.status, r.body)
	}
	var p page
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("GET /v1/requests?%s: %s: %v", query, r.body, err)
	}
	return p
}

// keys returns the keys of the page's requests, in order.
func (p page) keys(t *testing.T) []string {
	t.Helper()
	keys := make([]string, len(p.Data))
	for i, raw := range p.Data {
		var v wire.Request
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		keys[i] = v.Key
	}
	return keys
}

func listIntent(run string, step int, tool string) string {
	return fmt.Sprintf(`{"run_id": %q, "step": %d, "tool": %q, "effect": {"invoice": "inv_1"}, "summary": "listed"}`, run, step, tool)
}

// The list answers the agent's requests newest first, each exactly as GET
// /v1/requests/{ref} answers it, filtered by every parameter given, and
// pages through them by cursor without repeating one while others arrive.
func TestHookListRequests(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		var made []wire.Request // oldest first
		for i, tool := range []string{"billing.credit", "deploy.release", "billing.credit", "billing.credit", "deploy.release"} {
			r := b.post(t, listIntent(fmt.Sprintf("r-list-%d", i%3), i, tool))
			if r.status != http.StatusCreated {
				t.Fatalf("create = %d %s", r.status, r.body)
			}
			made = append(made, r.view(t))
		}
		if r := b.do(t, http.MethodPost, "/v1/requests/"+made[1].Key+"/cancel", testToken, nil, nil); r.status != http.StatusOK {
			t.Fatalf("cancel = %d %s", r.status, r.body)
		}
		keys := func(is ...int) []string {
			out := make([]string, len(is))
			for n, i := range is {
				out[n] = made[i].Key
			}
			return out
		}

		all := b.list(t, testToken, "")
		if want := keys(4, 3, 2, 1, 0); !slices.Equal(all.keys(t), want) || all.NextCursor != nil {
			t.Fatalf("the list = %v, next %v; want %v, null", all.keys(t), all.NextCursor, want)
		}
		for _, raw := range all.Data {
			var v wire.Request
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			got := b.do(t, http.MethodGet, "/v1/requests/"+v.ID, testToken, nil, nil)
			if !bytes.Equal(raw, bytes.TrimSpace(got.body)) {
				t.Errorf("listed as %s\nGET answers %s", raw, got.body)
			}
		}

		for query, want := range map[string][]string{
			"status=cancelled":                   keys(1),
			"status=pending":                     keys(4, 3, 2, 0),
			"status=expired":                     {},
			"tool=deploy.release":                keys(4, 1),
			"run_id=r-list-0":                    keys(3, 0),
			"run_id=r-list-9":                    {},
			"settled=true":                       keys(1),
			"settled=false":                      keys(4, 3, 2, 0),
			"status=pending&tool=deploy.release": keys(4),
			"tool=billing.credit&run_id=r-list-2&settled=false": keys(2),
			"limit=5":             keys(4, 3, 2, 1, 0),
			"limit=100":           keys(4, 3, 2, 1, 0),
			"run_id=r%2Dlist%2D1": keys(4, 1),
		} {
			if p := b.list(t, testToken, query); !slices.Equal(p.keys(t), want) || p.NextCursor != nil {
				t.Errorf("?%s = %v, next %v; want %v, null", query, p.keys(t), p.NextCursor, want)
			}
		}

		// Two at a time: a request made between pages is newer than the
		// listing's start, so it never shows, and none repeats.
		first := b.list(t, testToken, "limit=2")
		if !slices.Equal(first.keys(t), keys(4, 3)) || first.NextCursor == nil {
			t.Fatalf("first page = %v, next %v", first.keys(t), first.NextCursor)
		}
		if r := b.post(t, listIntent("r-list-late", 1, "billing.credit")); r.status != http.StatusCreated {
			t.Fatalf("create = %d %s", r.status, r.body)
		}
		second := b.list(t, testToken, "limit=2&cursor="+*first.NextCursor)
		if !slices.Equal(second.keys(t), keys(2, 1)) || second.NextCursor == nil {
			t.Fatalf("second page = %v, next %v", second.keys(t), second.NextCursor)
		}
		last := b.list(t, testToken, "cursor="+url.QueryEscape(*second.NextCursor)+"&limit=2")
		if !slices.Equal(last.keys(t), keys(0)) || last.NextCursor != nil {
			t.Fatalf("last page = %v, next %v; want %v, null", last.keys(t), last.NextCursor, keys(0))
		}
		// A cursor carries no filter: with one, the filters asked for apply
		// from where it stands.
		if p := b.list(t, testToken, "status=pending&cursor="+*first.NextCursor); !slices.Equal(p.keys(t), keys(2, 0)) {
			t.Errorf("pending after the first page = %v, want %v", p.keys(t), keys(2, 0))
		}
		if r := b.do(t, http.MethodGet, "/v1/requests", "wrong", nil, nil); r.status != http.StatusUnauthorized {
			t.Errorf("without a valid token = %d %s", r.status, r.body)
		}
	})
}

// A query the list cannot read is refused 422 invalid_request naming the
// parameter at fault, and nothing is listed.
func TestHookListRefusesWhatItCannotRead(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		cursor, err := encodeCursor(store.PositionOf(req))
		if err != nil {
			t.Fatal(err)
		}
		edited := []byte(cursor)
		edited[5] ^= 'A' ^ 'B'
		if edited[5] == cursor[5] {
			t.Fatal("the edit changed nothing")
		}
		for query, field := range map[string]string{
			"limit=0":                            "limit",
			"limit=101":                          "limit",
			"limit=-1":                           "limit",
			"limit=2.5":                          "limit",
			"limit=ten":                          "limit",
			"limit=":                             "limit",
			"status=done":                        "status",
			"status=PENDING":                     "status",
			"tool=db.drop":                       "tool",
			"run_id=r%00":                        "run_id",
			"run_id=%FF":                         "run_id",
			"run_id=" + strings.Repeat("r", 257): "run_id",
			"run_id=%zz":                         "run_id",
			"settled=yes":                        "settled",
			"settled=1":                          "settled",
			"cursor=" + cursor[:len(cursor)-2]:   "cursor",
			"cursor=" + string(edited):           "cursor",
			"cursor=" + cursor + "A":             "cursor",
			"cursor=" + cursor + "%3D":           "cursor",
			"cursor=not-a-cursor":                "cursor",
			"cursor=" + base64.RawURLEncoding.EncodeToString(make([]byte, 29)): "cursor",
			"state=pending":                       "state",
			"wait=30s":                            "wait",
			"status=pending&status=approved":      "status",
			"limit=5&tool=billing.credit&limit=5": "limit",
		} {
			r := b.do(t, http.MethodGet, "/v1/requests?"+query, testToken, nil, nil)
			if code, got := r.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || got != field {
				t.Errorf("?%.60s = %d %s; want 422 invalid_request naming %s", query, r.status, r.body, field)
			}
		}
		if p := b.list(t, testToken, "cursor="+cursor); len(p.Data) != 0 || p.NextCursor != nil {
			t.Errorf("after the only request: %v, next %v", p.keys(t), p.NextCursor)
		}
	})
}

// An agent lists only its own requests, whatever cursor it holds; an admin
// agent lists every agent's.
func TestHookListShowsOnlyTheAgentsOwnRequests(t *testing.T) {
	t.Parallel()
	forEachHookStore(t, func(t *testing.T, b *isolationBundle) {
		a1 := b.mustCreate(t, tokenA, intentBody("r-a", 4200), "")
		other := b.mustCreate(t, tokenB, intentBody("r-b", 4200), "")
		a2 := b.mustCreate(t, tokenA, intentBody("r-a", 4300), "")
		for token, want := range map[string][]string{
			tokenA:     {a2.Key, a1.Key},
			tokenB:     {other.Key},
			tokenAdmin: {a2.Key, other.Key, a1.Key},
		} {
			if got := b.list(t, token, "").keys(t); !slices.Equal(got, want) {
				t.Errorf("%s lists %v, want %v", token, got, want)
			}
		}
		// agent-a's cursor in agent-b's hands continues agent-b's list.
		first := b.list(t, tokenA, "limit=1")
		if first.NextCursor == nil {
			t.Fatal("no cursor after agent-a's first request")
		}
		if got := b.list(t, tokenB, "cursor="+*first.NextCursor).keys(t); !slices.Equal(got, []string{other.Key}) {
			t.Errorf("agent-b with agent-a's cursor lists %v, want only its own %s", got, other.Key)
		}
		if got := b.list(t, tokenB, "run_id=r-a").keys(t); len(got) != 0 {
			t.Errorf("agent-b lists agent-a's run: %v", got)
		}
	})
}

// A cursor holds its position exactly, and any change to one is refused.
func TestCursorRoundTripsAndRefusesEdits(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
	p := store.RequestPosition{CreatedAt: at, ID: "0b9c6c0e-5d1f-4d7a-9f2e-8c4b3a2d1e0f"}
	cursor, err := encodeCursor(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeCursor(cursor)
	if err != nil || !got.CreatedAt.Equal(at) || got.ID != p.ID {
		t.Fatalf("decodeCursor(encodeCursor(%+v)) = %+v, %v", p, got, err)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := range cursor {
		for _, c := range alphabet {
			if byte(c) == cursor[i] {
				continue
			}
			edited := cursor[:i] + string(c) + cursor[i+1:]
			if _, err := decodeCursor(edited); err == nil {
				t.Errorf("the cursor with character %d made %q was accepted", i, c)
			}
		}
	}
	for _, bad := range []string{"", cursor[:len(cursor)-1], cursor + "=", strings.ToUpper(cursor)} {
		if _, err := decodeCursor(bad); err == nil {
			t.Errorf("decodeCursor(%q) accepted it", bad)
		}
	}
	if _, err := encodeCursor(store.RequestPosition{CreatedAt: at, ID: "wa_not_an_id"}); err == nil {
		t.Error("encodeCursor accepted an id that is not a UUID")
	}
}

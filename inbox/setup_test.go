package inbox

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

const (
	toolName  = "billing.credit"
	reviewer  = "U0REVIEWER"
	requester = "U0REQUESTER"
	outsider  = "U0OUTSIDER"
)

// bundle is what most inbox tests share: a service on a fresh database and
// the inbox serving it on a loopback test server, with a session.
type bundle struct {
	db       *postgres.Driver // nil on another driver
	store    store.Store
	rawCount func(query string, args ...any) (int, error)
	svc      *approvals.Service
	server   *site
	ctx      context.Context
}

// site is an inbox on a loopback test server and a client that behaves as a
// browser does: it keeps cookies, and it hands redirects back to the test.
type site struct {
	*httptest.Server
	handler *Handler
	client  *http.Client
}

func newClient() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err)
	}
	return &http.Client{
		Timeout:       10 * time.Second,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// enter opens the entry link, as the person at serve's terminal does, and
// fails the test unless it leads to the inbox with a session.
func (s *site) enter(t testing.TB) {
	t.Helper()
	resp, err := s.client.Get(s.handler.EntryURL(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	status, body := readAll(t, resp)
	if status != http.StatusSeeOther || resp.Header.Get("Location") != DefaultPrefix+"/" {
		t.Fatalf("the entry link answered %d, Location %q:\n%s", status, resp.Header.Get("Location"), body)
	}
	if s.sessionCookie() == nil {
		t.Fatal("the entry link set no session cookie")
	}
}

// sessionCookie returns the session cookie the client holds, or nil.
func (s *site) sessionCookie() *http.Cookie {
	u, _ := url.Parse(s.URL + DefaultPrefix + "/")
	for _, c := range s.client.Jar.Cookies(u) {
		if c.Name == SessionCookie {
			return c
		}
	}
	return nil
}

func setup(t testing.TB) *bundle {
	t.Helper()
	db := storetest.NewDB(t)
	return setupOn(t, db, store.NewLedger(db, store.Options{}), func(query string, args ...any) (n int, err error) {
		err = db.Pool.QueryRow(context.Background(), query, args...).Scan(&n)
		return n, err
	})
}

// setupWith is setup on a fresh database of driver d.
func setupWith(t *testing.T, d *drivertest.Driver) *bundle {
	t.Helper()
	bk := d.Open(t, true)
	return setupOn(t, nil, bk.Store, bk.QueryInt)
}

func setupOn(t testing.TB, db *postgres.Driver, s store.Store, rawCount func(string, ...any) (int, error)) *bundle {
	t.Helper()
	svc := approvalstest.New(t, approvals.Config{
		DB: s,
		Tools: map[string]approvals.Tool{
			toolName: {Name: toolName, Approvers: []string{reviewer, requester}, RequestTTL: time.Hour, MaxAttempts: 3},
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	b := &bundle{db: db, store: s, rawCount: rawCount, svc: svc, ctx: context.Background()}
	b.server = b.serve(t, Options{Reviewer: reviewer})
	return b
}

// serve starts an inbox on the bundle's service and opens a session on it;
// opts that leave Service, Store or Logger unset get the bundle's.
func (b *bundle) serve(t testing.TB, opts Options) *site {
	t.Helper()
	s := b.start(t, opts)
	s.enter(t)
	return s
}

// start starts an inbox on the bundle's service, with a client that has no
// session yet.
func (b *bundle) start(t testing.TB, opts Options) *site {
	t.Helper()
	opts.Service = cmp.Or(opts.Service, b.svc)
	if opts.Store == nil {
		opts.Store = b.store
	}
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	h := New(opts)
	mux := http.NewServeMux()
	mux.Handle(DefaultPrefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &site{Server: srv, handler: h, client: newClient()}
}

var runs atomic.Int64

// submit stores a fresh intent (approvalstest's, on a run of its own, for
// the inbox's tool), made for requester, and fails the test on error.
func (b *bundle) submit(t testing.TB, opts *approvalstest.IntentOpts) store.Request {
	t.Helper()
	in := approvalstest.Intent(opts)
	in.RunID = fmt.Sprintf("r-%d-%d", time.Now().UnixNano(), runs.Add(1))
	in.Tool, in.RequestedFor = toolName, requester
	return approvalstest.Submit(t, b.svc, "billing-agent", in)
}

// count returns a single integer from a query.
func (b *bundle) count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	n, err := b.rawCount(sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// get fetches a page with the site's client and returns its status and body.
func get(t testing.TB, srv *site, path string) (int, string) {
	t.Helper()
	resp, err := srv.client.Get(srv.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return readAll(t, resp)
}

func readAll(t testing.TB, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// decisionForm is what a card's Approve or Reject button posts.
func decisionForm(req store.Request, verdict store.Verdict) url.Values {
	return url.Values{
		fieldRequestID: {req.ID}, fieldRound: {fmt.Sprint(req.Round)},
		fieldPayloadHash: {req.PayloadHash}, fieldVerdict: {string(verdict)},
	}
}

// post sends a form as a same-origin browser would, with extra headers.
func post(t testing.TB, srv *site, path string, form url.Values, header http.Header) *http.Response {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, vs := range header {
		r.Header[k] = vs
	}
	resp, err := srv.client.Do(r)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// decide posts a decision, expects the redirect to the request page, and
// returns the notice code it carries and the page it leads to.
func decide(t testing.TB, srv *site, form url.Values) (notice, page string) {
	t.Helper()
	resp := post(t, srv, DefaultPrefix+"/decide", form, nil)
	status, body := readAll(t, resp)
	if status != http.StatusSeeOther {
		t.Fatalf("decision answered %d, want 303:\n%s", status, body)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultPrefix + "/requests/" + form.Get(fieldRequestID); loc.Path != want {
		t.Fatalf("redirected to %s, want %s", loc.Path, want)
	}
	status, page = get(t, srv, loc.RequestURI())
	if status != http.StatusOK {
		t.Fatalf("request page answered %d:\n%s", status, page)
	}
	return loc.Query().Get("notice"), page
}

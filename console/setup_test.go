package console

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

const (
	toolName  = "billing.credit"
	otherTool = "payroll.change"
	alice     = "oidc:alice@example.com" // approves billing.credit by name
	bob       = "oidc:bob@example.com"   // approves it through oidc:group:finance
	eve       = "oidc:eve@example.com"   // approves payroll.change only
	requester = "oidc:requester@example.com"
)

// bundle is a console on a fresh database, signed in against a real OpenID
// provider running in the test process on 127.0.0.1.
type bundle struct {
	store store.Store
	svc   *approvals.Service
	idp   *provider
	h     *Handler
	// groups resolves oidc:group: for svc; SetMembers as a reload does.
	groups *Groups
	srv    *httptest.Server
}

// setup builds the bundle; each with may change the console's options
// (knowing the bundle's store and service) before it is made.
func setup(t *testing.T, with ...func(*bundle, *Options)) *bundle {
	t.Helper()
	db := storetest.NewDB(t)
	s := store.NewLedger(db, store.Options{})
	groups := &Groups{}
	svc := approvalstest.New(t, approvals.Config{
		DB: s,
		Tools: map[string]approvals.Tool{
			toolName:  {Name: toolName, Approvers: []string{alice, "oidc:group:finance"}, RequestTTL: time.Hour, MaxAttempts: 3, Reversible: true},
			otherTool: {Name: otherTool, Approvers: []string{eve}, RequestTTL: time.Hour, MaxAttempts: 3},
			slackOnly: {Name: slackOnly, Approvers: []string{alice}, RequestTTL: time.Hour, MaxAttempts: 3, Surfaces: []string{"slack"}},
		},
		Groups: groups,
		Logger: slog.New(slog.DiscardHandler),
	})
	b := &bundle{store: s, svc: svc, groups: groups}
	mux := http.NewServeMux()
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	b.idp = startProvider(t, b.srv.URL)
	opts := Options{
		Service: svc, Store: s, Issuer: b.idp.issuer(), ClientID: b.idp.clientID, ClientSecret: b.idp.clientSecret,
		RedirectURL: b.srv.URL + Prefix + "/callback", GroupsClaim: "groups",
		Secrets: [][]byte{[]byte("console-test-secret")}, Logger: slog.New(slog.DiscardHandler),
	}
	for _, f := range with {
		f(b, &opts)
	}
	h := New(opts)
	b.h = h
	mux.Handle(Prefix+"/", h)
	return b
}

// browser is an HTTP client that keeps cookies and follows redirects, as a
// browser does; last is the address it ended on.
type browser struct {
	t      *testing.T
	b      *bundle
	client *http.Client
}

func (b *bundle) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, b: b, client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

// login signs in at the provider as the person with email and groups:
// the console sends the browser to the provider's sign-in page, the
// person enters their email and password there, and the provider sends
// the browser back to the console with a code.
func (br *browser) login(email string, groups ...string) {
	br.t.Helper()
	br.b.idp.add(email, groups...)
	resp, body := br.get(Prefix + "/")
	at := resp.Request.URL
	if resp.StatusCode != http.StatusOK || at.Host != mustURL(br.t, br.b.idp.issuer()).Host || at.Path != "/login/username" {
		br.t.Fatalf("opening the console ended at %s with %d, not the provider's sign-in:\n%s", at, resp.StatusCode, body)
	}
	resp, err := br.client.PostForm(br.b.idp.issuer()+"/login/username", url.Values{
		"id": {at.Query().Get("authRequestID")}, "username": {email}, "password": {password}})
	if err != nil {
		br.t.Fatalf("signing in at the provider: %v", err)
	}
	body = read(br.t, resp)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != Prefix+"/" {
		br.t.Fatalf("signing in ended at %s with %d:\n%s", resp.Request.URL, resp.StatusCode, body)
	}
	if !strings.Contains(body, "oidc:"+strings.ToLower(email)) {
		br.t.Fatalf("the queue does not name the reviewer %s:\n%s", email, body)
	}
}

func (br *browser) get(path string) (*http.Response, string) {
	br.t.Helper()
	resp, err := br.client.Get(br.b.srv.URL + path)
	if err != nil {
		br.t.Fatalf("GET %s: %v", path, err)
	}
	return resp, read(br.t, resp)
}

// post sends a form as the console's own page does (same origin), with
// extra headers.
func (br *browser) post(path string, form url.Values, header http.Header) (*http.Response, string) {
	br.t.Helper()
	r, err := http.NewRequest(http.MethodPost, br.b.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		br.t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, vs := range header {
		r.Header[k] = vs
	}
	resp, err := br.client.Do(r)
	if err != nil {
		br.t.Fatalf("POST %s: %v", path, err)
	}
	return resp, read(br.t, resp)
}

func read(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the session's token from a page.
func csrf(t *testing.T, page string) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page has no CSRF token:\n%s", page)
	}
	return m[1]
}

var runs atomic.Int64

// submit stores a pending request for tool.
func (b *bundle) submit(t *testing.T, tool, summary string) store.Request {
	t.Helper()
	in := approvalstest.Intent(&approvalstest.IntentOpts{Summary: &summary})
	in.RunID = fmt.Sprintf("r-%d-%d", time.Now().UnixNano(), runs.Add(1))
	in.Tool, in.RequestedFor = tool, requester
	return approvalstest.Submit(t, b.svc, "billing-agent", in)
}

// status reads a request's status from the store.
func (b *bundle) status(t *testing.T, id string) store.RequestStatus {
	t.Helper()
	req, err := b.store.RequestByRef(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return req.Status
}

func decisionForm(req store.Request, verdict, token string) url.Values {
	f := url.Values{"request_id": {req.ID}, "round": {fmt.Sprint(req.Round)}, "payload_hash": {req.PayloadHash}, "verdict": {verdict}}
	if token != "" {
		f.Set("csrf", token)
	}
	return f
}

var itemRE = regexp.MustCompile(`name="item" value="([^"]+)"`)

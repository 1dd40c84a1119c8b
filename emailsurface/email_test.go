package emailsurface_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/emailsurface"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/surface"
)

const (
	ana = "ana@example.com"
	ben = "ben@example.com"
)

// bundle is an email surface on a real ledger, sending through mailpit,
// its links served by a local server.
type bundle struct {
	t       *testing.T
	ctx     context.Context
	mail    *mailpit
	store   store.Store
	review  *approvals.Service
	email   *emailsurface.Email
	deliver *surface.Deliverer
	server  *httptest.Server
	now     atomic.Pointer[time.Time] // the links' clock; nil: time.Now
	n       int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, ctx: context.Background(), mail: startMailpit(t, true)}
	b.store = store.NewLedger(storetest.NewDB(t), store.Options{})
	b.review = approvalstest.New(t, approvals.Config{DB: b.store, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{"email:" + ana, "email:" + ben, "UANA"}, MaxAttempts: 5},
		"notes.add":      {Name: "notes.add", Approvers: []string{"email:" + ana}},
		"billing.remind": {Name: "billing.remind", Approvers: []string{"email:" + ana, "email:" + ben}, RemindAfter: time.Millisecond},
	}})
	mux := http.NewServeMux()
	b.server = httptest.NewServer(mux)
	t.Cleanup(b.server.Close)
	var err error
	b.email, err = emailsurface.New(emailsurface.Config{
		SMTP: emailsurface.SMTP{Addr: b.mail.SMTPAddr, Username: b.mail.User, Password: b.mail.Password, TLS: b.mail.TLS, Timeout: 10 * time.Second},
		From: "countersign@example.com", LinkBase: b.server.URL, LinkTTL: time.Hour,
		Secrets: [][]byte{[]byte("dispatch-secret")},
		Uses:    func(tool string) bool { return tool != "notes.add" },
		Review:  b.review, Cards: b.store, Attempts: b.store,
		Now: func() time.Time {
			if p := b.now.Load(); p != nil {
				return *p
			}
			return time.Now()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle(emailsurface.LinkPath, b.email.Handler())
	b.deliver = surface.New(surface.Config{Ledger: b.store, Tools: b.review, Adapters: []surface.Adapter{b.email.Surface()}, PostInterval: -1})
	return b
}

// submit stores a request on tool, its card post owed.
func (b *bundle) submit(tool string) store.Request {
	b.t.Helper()
	b.n++
	effect := fmt.Sprintf(`{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"}`, b.n)
	return approvalstest.Submit(b.t, b.review, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
		Step: new(fmt.Sprint(b.n)), Tool: &tool, Effect: &effect, Summary: new(fmt.Sprintf("Credit inv_%d", b.n)),
	}))
}

// drain delivers the outbox until nothing is left to deliver.
func (b *bundle) drain() {
	b.t.Helper()
	for range 20 {
		n, err := b.deliver.RunOnce(b.ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	b.t.Fatal("the outbox did not drain")
}

var linkRE = regexp.MustCompile(`(?m)^(Approve|Reject):\s*\n(\S+)`)

// links are a message's approve and reject links.
func links(t *testing.T, m message) (approve, reject string) {
	t.Helper()
	for _, match := range linkRE.FindAllStringSubmatch(m.Text, -1) {
		switch match[1] {
		case "Approve":
			approve = match[2]
		case "Reject":
			reject = match[2]
		}
	}
	if approve == "" || reject == "" {
		t.Fatalf("message %q has no approve and reject links:\n%s", m.Subject, m.Text)
	}
	return approve, reject
}

// cardFor is the message to rcpt asking for a review.
func (b *bundle) cardFor(rcpt string) message {
	b.t.Helper()
	var found []message
	for _, m := range b.mail.messages(b.t) {
		if strings.HasPrefix(m.Subject, "Review:") && len(m.To) == 1 && m.To[0].Address == rcpt {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		b.t.Fatalf("%d review messages to %s, want 1", len(found), rcpt)
	}
	return found[0]
}

func get(t *testing.T, link string) (int, string) {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// post submits the confirmation page's form of link, as the page's browser
// would (same origin), with address typed.
func post(t *testing.T, link, address string) (int, string) {
	t.Helper()
	token := link[strings.LastIndex(link, "/")+1:]
	return postForm(t, link, url.Values{"token": {token}, "address": {address}}, nil)
}

func postForm(t *testing.T, link string, form url.Values, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, link, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// undecided fails the test when req's round has a decision.
func (b *bundle) undecided(req store.Request, round int, what string) {
	b.t.Helper()
	if d, err := b.store.DecisionFor(b.ctx, req.ID, round); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("%s decided the request: %+v, %v", what, d, err)
	}
}

func TestEachApproverGetsOneMessageAndOnlyItsPagesPOSTDecides(t *testing.T) {
	b := setup(t)
	req := b.submit("billing.credit")
	other := b.submit("notes.add") // its tool's requests do not go to email
	b.drain()
	b.drain()

	all := b.mail.messages(t)
	if len(all) != 2 {
		t.Fatalf("%d messages, want one to each email approver of billing.credit (none for notes.add)", len(all))
	}
	anaMsg, benMsg := b.cardFor(ana), b.cardFor(ben)
	for _, m := range []message{anaMsg, benMsg} {
		for _, want := range []string{"billing.credit", "Credit inv_1", `"invoice": "inv_1"`, approvals.ShortKey(req.Key), "billing-agent", "Approving runs exactly"} {
			if !strings.Contains(m.Text+m.Subject, want) {
				t.Errorf("message to %v lacks %q:\n%s", m.To, want, m.Text)
			}
		}
		if strings.Contains(m.Text, other.Summary) {
			t.Errorf("a message names the request of a tool that is not on email")
		}
	}
	approve, _ := links(t, anaMsg)
	benApprove, benReject := links(t, benMsg)
	if approve == benApprove {
		t.Fatal("two approvers got the same link")
	}

	// A scanner following the link decides nothing.
	for range 3 {
		status, body := get(t, approve)
		if status != http.StatusOK || !strings.Contains(body, `<form method="post">`) || !strings.Contains(body, "inv_1") {
			t.Fatalf("GET of the link: %d\n%s", status, body)
		}
	}
	b.undecided(req, 1, "a GET")

	// A forwarded link: the address typed is not the one it was sent to.
	for _, typed := range []string{ben, "eve@example.com", "", "ANA@example.com.evil"} {
		if status, body := post(t, approve, typed); status != http.StatusForbidden || !strings.Contains(body, "Nothing changed") {
			t.Fatalf("POST with %q typed: %d\n%s", typed, status, body)
		}
	}
	b.undecided(req, 1, "a POST with the wrong address")
	// A POST that is not from the page: without its token, or from another site.
	if status, _ := postForm(t, approve, url.Values{"address": {ana}}, nil); status != http.StatusForbidden {
		t.Fatalf("POST without the page's token: %d", status)
	}
	token := approve[strings.LastIndex(approve, "/")+1:]
	if status, _ := postForm(t, approve, url.Values{"token": {token}, "address": {ana}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}); status != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d", status)
	}
	b.undecided(req, 1, "a POST not from the page")

	// The page's POST with the address decides, once (case of the address aside).
	status, body := post(t, approve, "Ana@Example.com")
	if status != http.StatusOK || !strings.Contains(body, "You approved") {
		t.Fatalf("POST with the right address: %d\n%s", status, body)
	}
	d, err := b.store.DecisionFor(b.ctx, req.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d.DecidedBy != "email:"+ana || d.Via != emailsurface.Via || d.Verdict != store.VerdictApprove {
		t.Fatalf("decision %+v, want approved by email:%s via email", d, ana)
	}
	// The same link again, and the other approver's links: already decided.
	for _, l := range []struct{ link, addr string }{{approve, ana}, {benReject, ben}, {benApprove, ben}} {
		status, body := post(t, l.link, l.addr)
		if status != http.StatusConflict || !strings.Contains(body, "Already approved by email:"+ana) {
			t.Fatalf("POST after the decision: %d\n%s", status, body)
		}
	}
	if again, _ := b.store.DecisionFor(b.ctx, req.ID, 1); again.ID != d.ID || again.Verdict != store.VerdictApprove {
		t.Fatalf("the decision changed: %+v", again)
	}

	// Each approver gets one follow-up, threaded under its message, however
	// often the outbox is worked.
	b.drain()
	b.drain()
	var decided []message
	for _, m := range b.mail.messages(t) {
		if strings.HasPrefix(m.Subject, "Decided:") {
			decided = append(decided, m)
			if !strings.Contains(m.Text, "Approved by email:"+ana) {
				t.Errorf("follow-up lacks the decision:\n%s", m.Text)
			}
			card := anaMsg
			if m.To[0].Address == ben {
				card = benMsg
			}
			if m.InReplyTo != "<"+card.MessageID+">" {
				t.Errorf("follow-up to %s is in reply to %q, want its card <%s>", m.To[0].Address, m.InReplyTo, card.MessageID)
			}
		}
	}
	if len(decided) != 2 {
		t.Fatalf("%d Decided messages, want one to each approver", len(decided))
	}
}

func TestLinksThatDecideNothing(t *testing.T) {
	b := setup(t)
	req := b.submit("billing.credit")
	b.drain()
	approve, _ := links(t, b.cardFor(ana))
	benApprove, benReject := links(t, b.cardFor(ben))

	// Addresses guessed on a link: after five wrong ones, the right one
	// decides nothing either.
	for i := range 5 {
		if status, _ := post(t, benReject, fmt.Sprintf("guess%d@example.com", i)); status != http.StatusForbidden {
			t.Fatalf("guess %d: %d", i, status)
		}
	}
	if status, body := post(t, benReject, ben); status != http.StatusTooManyRequests || !strings.Contains(body, "too many times") {
		t.Fatalf("the right address after five guesses: %d\n%s", status, body)
	}
	b.undecided(req, 1, "a link whose address was guessed")

	// A tampered token: any character changed, or cut short.
	token := approve[strings.LastIndex(approve, "/")+1:]
	base := approve[:strings.LastIndex(approve, "/")+1]
	for i, bad := range []string{
		base + token[:len(token)-1] + flip(token[len(token)-1]),
		base + token[:10] + flip(token[10]) + token[11:],
		base + token[:len(token)/2],
	} {
		if status, body := get(t, bad); status != http.StatusNotFound || !strings.Contains(body, "not valid") {
			t.Fatalf("GET of tampered link %d: %d\n%s", i, status, body)
		}
		if status, _ := post(t, bad, ana); status != http.StatusNotFound {
			t.Fatalf("POST of tampered link %d: %d", i, status)
		}
	}
	b.undecided(req, 1, "a tampered link")

	// A link for another round: the request's next, or one it never had.
	for _, round := range []int{2, 0} {
		l := emailsurface.LinkFor(b.email, req.ID, round, req.PayloadHash, store.VerdictApprove, ana, time.Now().Add(time.Hour))
		if status, body := post(t, l, ana); status != http.StatusConflict || !strings.Contains(body, "earlier round") {
			t.Fatalf("POST of a link for round %d: %d\n%s", round, status, body)
		}
	}
	// A link for another payload of the round (a stale card).
	stale := emailsurface.LinkFor(b.email, req.ID, 1, "sha256:0000", store.VerdictApprove, ana, time.Now().Add(time.Hour))
	if status, body := post(t, stale, ana); status == http.StatusOK {
		t.Fatalf("POST of a link for another payload: %d\n%s", status, body)
	}
	b.undecided(req, 1, "a link for another round or payload")

	// Past its expiry, neither the page nor its POST decides.
	later := time.Now().Add(time.Hour + time.Minute)
	b.now.Store(&later)
	if status, body := get(t, approve); status != http.StatusGone || !strings.Contains(body, "expired") {
		t.Fatalf("GET of an expired link: %d\n%s", status, body)
	}
	if status, _ := post(t, approve, ana); status != http.StatusGone {
		t.Fatalf("POST of an expired link: %d", status)
	}
	b.undecided(req, 1, "an expired link")
	b.now.Store(nil)

	// Decided elsewhere (Slack, here its approver directly through the
	// service): the link says so and decides nothing.
	out, err := b.review.Decide(b.ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictReject, DecidedBy: "UANA", Via: "slack"})
	if err != nil || !out.Created {
		t.Fatalf("deciding in Slack: %+v, %v", out, err)
	}
	if status, body := get(t, benApprove); status != http.StatusConflict || !strings.Contains(body, "Already rejected by UANA") || strings.Contains(body, "<form") {
		t.Fatalf("GET after a decision elsewhere: %d\n%s", status, body)
	}
	if status, _ := post(t, benApprove, ben); status != http.StatusConflict {
		t.Fatalf("POST after a decision elsewhere: %d", status)
	}
	if d, _ := b.store.DecisionFor(b.ctx, req.ID, 1); d.DecidedBy != "UANA" || d.Verdict != store.VerdictReject {
		t.Fatalf("decision %+v, want Slack's reject", d)
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

// Two approvers' links posted at once (one approval needed): one decision.
func TestConcurrentLinksGiveOneDecision(t *testing.T) {
	b := setup(t)
	var reqs []store.Request
	for range 5 {
		reqs = append(reqs, b.submit("billing.credit"))
	}
	b.drain()
	byReq := map[string][2]string{}
	for _, m := range b.mail.messages(t) {
		approve, reject := links(t, m)
		for _, r := range reqs {
			if strings.Contains(m.Subject, r.Summary) {
				pair := byReq[r.ID]
				if m.To[0].Address == ana {
					pair[0] = approve
				} else {
					pair[1] = reject
				}
				byReq[r.ID] = pair
			}
		}
	}
	for _, r := range reqs {
		pair := byReq[r.ID]
		if pair[0] == "" || pair[1] == "" {
			t.Fatalf("request %s lacks a link: %v", r.Summary, pair)
		}
		var wg sync.WaitGroup
		var decided atomic.Int32
		for i, l := range pair {
			addr := []string{ana, ben}[i]
			wg.Go(func() {
				if status, _ := post(t, l, addr); status == http.StatusOK {
					decided.Add(1)
				}
			})
		}
		wg.Wait()
		if decided.Load() != 1 {
			t.Fatalf("%s: %d POSTs decided, want 1", r.Summary, decided.Load())
		}
		d, err := b.store.DecisionFor(b.ctx, r.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[store.Verdict]string{store.VerdictApprove: "email:" + ana, store.VerdictReject: "email:" + ben}[d.Verdict]; d.DecidedBy != want {
			t.Fatalf("decision %+v: verdict and decider disagree", d)
		}
	}
}

// With STARTTLS required, a server that offers none gets no message: the
// delivery fails for good instead of sending the write in plaintext.
func TestStartTLSRequiredSendsNothingInPlaintext(t *testing.T) {
	b := setup(t)
	plain := startMailpit(t, false)
	e, err := emailsurface.New(emailsurface.Config{
		SMTP: emailsurface.SMTP{Addr: plain.SMTPAddr, Timeout: 5 * time.Second},
		From: "countersign@example.com", LinkBase: b.server.URL, Review: b.review, Cards: b.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	d := surface.New(surface.Config{Ledger: b.store, Tools: b.review, Adapters: []surface.Adapter{e.Surface()}, PostInterval: -1})
	req := b.submit("billing.credit")
	if _, err := d.RunOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(plain.messages(t)); n != 0 {
		t.Fatalf("%d messages sent in plaintext", n)
	}
	if _, err := b.store.CardFor(b.ctx, req.ID, 1, emailsurface.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a card was recorded: %v", err)
	}
	// Opportunistic sends to the same server.
	e, err = emailsurface.New(emailsurface.Config{
		SMTP: emailsurface.SMTP{Addr: plain.SMTPAddr, Timeout: 5 * time.Second, Opportunistic: true},
		From: "countersign@example.com", LinkBase: b.server.URL, Review: b.review, Cards: b.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	d = surface.New(surface.Config{Ledger: b.store, Tools: b.review, Adapters: []surface.Adapter{e.Surface()}, PostInterval: -1})
	b.submit("billing.credit")
	if _, err := d.RunOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(plain.messages(t)); n != 2 {
		t.Fatalf("%d messages with opportunistic STARTTLS, want one to each approver", n)
	}
}

// A reminder reaches each approver once, threaded under its message.
func TestRemindersReachEachApproverOnce(t *testing.T) {
	b := setup(t)
	req := b.submit("billing.remind")
	b.drain()
	cards := map[string]message{ana: b.cardFor(ana), ben: b.cardFor(ben)}
	time.Sleep(20 * time.Millisecond)
	if n, err := b.review.NudgeOnce(b.ctx); err != nil || n != 1 {
		t.Fatalf("NudgeOnce = %d, %v; want the one reminder", n, err)
	}
	if n, err := b.review.NudgeOnce(b.ctx); err != nil || n != 0 {
		t.Fatalf("NudgeOnce again = %d, %v; want none", n, err)
	}
	b.drain()
	b.drain()
	var reminders []message
	for _, m := range b.mail.messages(t) {
		if strings.HasPrefix(m.Subject, "Reminder:") {
			reminders = append(reminders, m)
			if card := cards[m.To[0].Address]; m.InReplyTo != "<"+card.MessageID+">" || !strings.Contains(m.Text, "still pending") ||
				!strings.Contains(m.Subject, approvals.ShortKey(req.Key)) {
				t.Errorf("reminder to %s: in reply to %q, want <%s>:\n%s", m.To[0].Address, m.InReplyTo, card.MessageID, m.Text)
			}
		}
	}
	if len(reminders) != 2 {
		t.Fatalf("%d reminders, want one to each approver", len(reminders))
	}
}

package teamssurface_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/teamssurface"
)

const (
	appID   = "00000000-0000-4000-8000-0000000000b0"
	conv    = "19:billing@thread.tacv2"
	ana     = "6a1f0c4e-1111-4222-8333-00000000000a"
	ben     = "6a1f0c4e-1111-4222-8333-00000000000b"
	carl    = "6a1f0c4e-1111-4222-8333-00000000000c"
	botAuth = "Bearer bot-token-1"
)

// connector is a local Bot Connector and Bot Framework login: it serves
// OpenID metadata and the keys its tokens are signed with, issues the bot
// its token, records the activities posted and replaced, and signs the
// activities it sends the bot.
type connector struct {
	t      *testing.T
	server *httptest.Server
	key    *rsa.PrivateKey

	mu      sync.Mutex
	posted  []map[string]any // new activities, in order
	updated []map[string]any
	replies []map[string]any
	badAuth int // calls without the bot's token
	n       int
}

func newConnector(t *testing.T) *connector {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := &connector{t: t, key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /meta", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": teamssurface.Issuer, "jwks_uri": c.server.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") != appID || r.FormValue("client_secret") != "app-password" || r.FormValue("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		writeJSON(w, map[string]any{"token_type": "Bearer", "access_token": "bot-token-1", "expires_in": 3600})
	})
	record := func(list *[]map[string]any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if r.Header.Get("Authorization") != botAuth {
				c.badAuth++
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			var act map[string]any
			if err := json.NewDecoder(r.Body).Decode(&act); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			act["_conversation"] = r.PathValue("conv")
			act["_activity"] = r.PathValue("id")
			*list = append(*list, act)
			c.n++
			writeJSON(w, map[string]any{"id": fmt.Sprintf("act-%d", c.n)})
		}
	}
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", record(&c.posted))
	mux.HandleFunc("PUT /v3/conversations/{conv}/activities/{id}", record(&c.updated))
	mux.HandleFunc("POST /v3/conversations/{conv}/activities/{id}", record(&c.replies))
	c.server = httptest.NewServer(mux)
	t.Cleanup(c.server.Close)
	return c
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// serviceURL is the connector's, as activities name it.
func (c *connector) serviceURL() string { return c.server.URL + "/" }

// tokenOpts bend a token the connector signs.
type tokenOpts struct {
	key        *rsa.PrivateKey // nil: the connector's
	kid        string
	issuer     string
	audience   string
	expiry     time.Time
	serviceURL string
}

func (c *connector) token(o tokenOpts) string {
	c.t.Helper()
	if o.key == nil {
		o.key = c.key
	}
	if o.kid == "" {
		o.kid = "k1"
	}
	if o.issuer == "" {
		o.issuer = teamssurface.Issuer
	}
	if o.audience == "" {
		o.audience = appID
	}
	if o.expiry.IsZero() {
		o.expiry = time.Now().Add(time.Hour)
	}
	if o.serviceURL == "" {
		o.serviceURL = c.serviceURL()
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: o.key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", o.kid))
	if err != nil {
		c.t.Fatal(err)
	}
	now := time.Now()
	if o.expiry.Before(now) {
		now = o.expiry.Add(-time.Hour)
	}
	raw, err := jwt.Signed(sig).Claims(jwt.Claims{Issuer: o.issuer, Audience: jwt.Audience{o.audience},
		Expiry: jwt.NewNumericDate(o.expiry), NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)), IssuedAt: jwt.NewNumericDate(now)}).
		Claims(map[string]any{"serviceurl": o.serviceURL}).Serialize()
	if err != nil {
		c.t.Fatal(err)
	}
	return raw
}

// invoke is the adaptiveCard/action activity Teams sends when user clicks
// the button carrying data on card activityID.
func (c *connector) invoke(user, activityID string, data map[string]any) map[string]any {
	return map[string]any{
		"type": "invoke", "name": "adaptiveCard/action", "id": "inv-" + user,
		"timestamp": time.Now().UTC().Format(time.RFC3339), "channelId": "msteams",
		"serviceUrl": c.serviceURL(), "replyToId": activityID,
		"from":         map[string]any{"id": "29:" + user, "aadObjectId": user, "name": "User " + user[len(user)-1:]},
		"recipient":    map[string]any{"id": "28:" + appID, "name": "countersign"},
		"conversation": map[string]any{"id": conv, "conversationType": "channel"},
		"value":        map[string]any{"action": map[string]any{"type": "Action.Execute", "verb": data["verdict"], "data": data}, "trigger": "manual"},
	}
}

// send posts activity to the bot with the bearer token, and returns the
// answer's status and decoded body.
func send(t *testing.T, url, token string, activity map[string]any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(activity)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	return resp.StatusCode, out
}

// bundle is the Teams surface on a real ledger, posting to a local
// connector, its messaging endpoint served by a local server.
type bundle struct {
	t       *testing.T
	ctx     context.Context
	conn    *connector
	store   store.Store
	review  *approvals.Service
	deliver *surface.Deliverer
	url     string // the messaging endpoint
	n       int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{t: t, ctx: context.Background(), conn: newConnector(t)}
	b.store = store.NewLedger(storetest.NewDB(t), store.Options{})
	b.review = approvalstest.New(t, approvals.Config{DB: b.store, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{"teams:" + ana, "teams:" + strings.ToUpper(ben)}, Surfaces: []string{"teams"}, MaxAttempts: 5},
		"notes.add":      {Name: "notes.add", Approvers: []string{"teams:" + ana}, Surfaces: []string{"slack"}},
	}})
	tm, err := teamssurface.New(teamssurface.Config{
		AppID: appID, AppPassword: "app-password",
		OpenIDMetadata: b.conn.server.URL + "/meta", TokenURL: b.conn.server.URL + "/token", ServiceURL: b.conn.server.URL,
		Conversation: func(tool string) string {
			if tool == "billing.credit" {
				return conv
			}
			return ""
		},
		Uses:   func(tool string) bool { return tool == "billing.credit" },
		Review: b.review, Cards: b.store,
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST "+teamssurface.MessagesPath, tm.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b.url = srv.URL + teamssurface.MessagesPath
	b.deliver = surface.New(surface.Config{Ledger: b.store, Tools: b.review, Adapters: []surface.Adapter{tm.Surface()}, PostInterval: -1})
	return b
}

func (b *bundle) submit() store.Request { return b.submitOn("billing.credit") }

func (b *bundle) submitOn(tool string) store.Request {
	b.t.Helper()
	b.n++
	effect := fmt.Sprintf(`{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"}`, b.n)
	return approvalstest.Submit(b.t, b.review, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
		Step: new(fmt.Sprint(b.n)), Tool: &tool, Effect: &effect, Summary: new(fmt.Sprintf("Credit inv_%d", b.n)),
	}))
}

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

// posted is the one card posted, its activity id and its actions' data by
// verb.
func (b *bundle) posted() (string, map[string]map[string]any) {
	b.t.Helper()
	b.conn.mu.Lock()
	defer b.conn.mu.Unlock()
	if len(b.conn.posted) != 1 || b.conn.badAuth != 0 {
		b.t.Fatalf("%d cards posted (%d calls without the bot's token), want 1", len(b.conn.posted), b.conn.badAuth)
	}
	act := b.conn.posted[0]
	if act["_conversation"] != conv {
		b.t.Errorf("the card went to %v, want %s", act["_conversation"], conv)
	}
	c := cardOf(b.t, act)
	if c["type"] != "AdaptiveCard" || c["version"] != "1.4" {
		b.t.Errorf("the attachment is not an Adaptive Card 1.4: %v", c)
	}
	actions := map[string]map[string]any{}
	list, _ := c["actions"].([]any)
	for _, a := range list {
		a := a.(map[string]any)
		if a["type"] != "Action.Execute" {
			b.t.Errorf("action %v is not Action.Execute", a)
		}
		actions[a["verb"].(string)] = a["data"].(map[string]any)
	}
	return "act-1", actions
}

// cardOf is the Adaptive Card an activity (or invoke answer) carries.
func cardOf(t *testing.T, act map[string]any) map[string]any {
	t.Helper()
	if act["type"] == teamssurface.CardType {
		c, _ := act["value"].(map[string]any)
		return c
	}
	atts, _ := act["attachments"].([]any)
	if len(atts) != 1 {
		t.Fatalf("activity has %d attachments, want 1: %v", len(atts), act)
	}
	att := atts[0].(map[string]any)
	if att["contentType"] != teamssurface.CardType {
		t.Fatalf("attachment is %v", att["contentType"])
	}
	return att["content"].(map[string]any)
}

func cardText(c map[string]any) string {
	b, _ := json.Marshal(c)
	return string(b)
}

func (b *bundle) undecided(req store.Request, what string) {
	b.t.Helper()
	if d, err := b.store.DecisionFor(b.ctx, req.ID, req.Round); !errors.Is(err, store.ErrNotFound) {
		b.t.Fatalf("%s decided the request: %+v, %v", what, d, err)
	}
}

func TestACardIsPostedAndAnApproversClickDecidesOnce(t *testing.T) {
	b := setup(t)
	req := b.submit()
	b.submitOn("notes.add") // its tool's requests do not go to Teams
	b.drain()
	activity, actions := b.posted()
	approve, reject := actions["approve"], actions["reject"]
	if approve == nil || reject == nil {
		t.Fatalf("the card's actions are %v, want approve and reject", actions)
	}
	if approve["request_id"] != req.ID || approve["payload_hash"] != req.PayloadHash || approve["round"] != float64(req.Round) || approve["verdict"] != "approve" || reject["verdict"] != "reject" {
		t.Errorf("approve carries %v, reject %v", approve, reject)
	}

	status, out := send(t, b.url, b.conn.token(tokenOpts{}), b.conn.invoke(ana, activity, approve))
	if status != http.StatusOK || out["statusCode"] != float64(200) || out["type"] != teamssurface.CardType {
		t.Fatalf("the invoke got %d %v", status, out)
	}
	shown := cardText(cardOf(t, out))
	if !strings.Contains(shown, "Approved by teams:"+ana+" via teams") || strings.Contains(shown, "Action.Execute") {
		t.Errorf("the answered card does not show the decision without buttons: %s", shown)
	}
	d, err := b.store.DecisionFor(b.ctx, req.ID, req.Round)
	if err != nil || d.Verdict != store.VerdictApprove || d.DecidedBy != "teams:"+ana || d.Via != teamssurface.Via {
		t.Fatalf("decision = %+v, %v", d, err)
	}

	// Ben, an approver too (his id written in capitals in the policy), is
	// told it was decided; the decision stands.
	_, out = send(t, b.url, b.conn.token(tokenOpts{}), b.conn.invoke(ben, activity, reject))
	if shown := cardText(cardOf(t, out)); !strings.Contains(shown, "Already approved") || !strings.Contains(shown, "Approved by teams:"+ana) {
		t.Errorf("a second click is answered %s", shown)
	}
	if d2, _ := b.store.DecisionFor(b.ctx, req.ID, req.Round); d2.ID != d.ID || d2.Verdict != store.VerdictApprove {
		t.Errorf("the decision changed to %+v", d2)
	}

	// The card posted is replaced to show the decision.
	b.drain()
	b.conn.mu.Lock()
	defer b.conn.mu.Unlock()
	if len(b.conn.updated) == 0 || !strings.Contains(cardText(cardOf(t, b.conn.updated[len(b.conn.updated)-1])), "Approved by") || b.conn.updated[0]["_activity"] != activity {
		t.Errorf("the card was not updated to show the decision: %v", b.conn.updated)
	}
}

func TestActivitiesNotSignedForTheBotDecideNothing(t *testing.T) {
	b := setup(t)
	req := b.submit()
	b.drain()
	activity, actions := b.posted()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		token string
		act   func(map[string]any)
	}{
		{"no token", "", nil},
		{"signed by another key", b.conn.token(tokenOpts{key: other}), nil},
		{"signed by another key under the connector's kid", b.conn.token(tokenOpts{key: other, kid: "k1"}), nil},
		{"an unknown kid", b.conn.token(tokenOpts{kid: "k2"}), nil},
		{"expired", b.conn.token(tokenOpts{expiry: time.Now().Add(-time.Hour)}), nil},
		{"for another audience", b.conn.token(tokenOpts{audience: "00000000-0000-4000-8000-0000000000ff"}), nil},
		{"from another issuer", b.conn.token(tokenOpts{issuer: "https://sts.example.com"}), nil},
		{"for another serviceUrl", b.conn.token(tokenOpts{}), func(a map[string]any) { a["serviceUrl"] = "https://attacker.example.com/" }},
		{"naming another serviceUrl", b.conn.token(tokenOpts{serviceURL: "https://attacker.example.com/"}), nil},
		{"with its signature cut", strings.Join(strings.Split(b.conn.token(tokenOpts{}), ".")[:2], ".") + ".", nil},
	} {
		act := b.conn.invoke(ana, activity, actions["approve"])
		if tc.act != nil {
			tc.act(act)
		}
		if status, out := send(t, b.url, tc.token, act); status != http.StatusUnauthorized {
			t.Errorf("%s: answered %d %v, want 401", tc.name, status, out)
		}
		b.undecided(req, tc.name)
	}

	// An activity that is not JSON cannot have its serviceUrl checked.
	r, _ := http.NewRequest(http.MethodPost, b.url, strings.NewReader(`{"type":"invoke",`))
	r.Header.Set("Authorization", "Bearer "+b.conn.token(tokenOpts{}))
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a cut activity answered %v, %v; want 401", resp, err)
	} else {
		resp.Body.Close()
	}
}

func TestANonApproversClickDecidesNothing(t *testing.T) {
	b := setup(t)
	req := b.submit()
	b.drain()
	activity, actions := b.posted()
	status, out := send(t, b.url, b.conn.token(tokenOpts{}), b.conn.invoke(carl, activity, actions["approve"]))
	if status != http.StatusOK {
		t.Fatalf("answered %d", status)
	}
	shown := cardText(cardOf(t, out))
	if !strings.Contains(shown, "Nothing changed") || !strings.Contains(shown, "Action.Execute") {
		t.Errorf("a non-approver's click is answered %s", shown)
	}
	b.undecided(req, "carl's click")

	// A click whose data was altered (another verdict than its verb)
	// decides nothing either.
	bad := b.conn.invoke(ana, activity, actions["approve"])
	bad["value"].(map[string]any)["action"].(map[string]any)["verb"] = "reject"
	if _, out := send(t, b.url, b.conn.token(tokenOpts{}), bad); out["type"] == teamssurface.CardType {
		t.Errorf("an altered click is answered with a card: %v", out)
	}
	b.undecided(req, "an altered click")
}

func TestFiftyConcurrentClicksDecideOnce(t *testing.T) {
	b := setup(t)
	req := b.submit()
	b.drain()
	activity, actions := b.posted()
	tok := b.conn.token(tokenOpts{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	decidedShown := 0
	for i := range 50 {
		user, verb := ana, "approve"
		if i%2 == 1 {
			user, verb = ben, "reject"
		}
		wg.Go(func() {
			status, out := send(t, b.url, tok, b.conn.invoke(user, activity, actions[verb]))
			if status != http.StatusOK || out["type"] != teamssurface.CardType {
				t.Errorf("click %d answered %d %v", i, status, out)
				return
			}
			if s := cardText(cardOf(t, out)); strings.Contains(s, "Approved by") || strings.Contains(s, "Rejected by") {
				mu.Lock()
				decidedShown++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	d, err := b.store.DecisionFor(b.ctx, req.ID, req.Round)
	if err != nil {
		t.Fatal(err)
	}
	if decidedShown != 50 {
		t.Errorf("%d of 50 answers show the decision", decidedShown)
	}
	votes, err := b.store.VotesFor(b.ctx, req.ID, req.Round)
	if err != nil {
		t.Fatal(err)
	}
	if len(votes) > 1 {
		t.Errorf("%d votes recorded for a round one vote decides: %+v", len(votes), votes)
	}
	r, err := b.store.RequestByID(b.ctx, req.ID)
	if err != nil || (r.Status != store.RequestApproved && r.Status != store.RequestRejected) || string(r.Status) != string(d.Verdict)+"d" && !(d.Verdict == store.VerdictReject && r.Status == store.RequestRejected) {
		t.Errorf("request %v after decision %+v (%v)", r.Status, d, err)
	}
}

func TestACardShowsADecisionMadeElsewhere(t *testing.T) {
	b := setup(t)
	req := b.submit()
	b.drain()
	activity, _ := b.posted()
	out, err := b.review.Decide(b.ctx, approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictReject, DecidedBy: "teams:" + ana, Via: "slack", Reason: "not this month"})
	if err != nil || !out.Created {
		t.Fatalf("deciding elsewhere: %+v, %v", out, err)
	}
	b.drain()
	b.conn.mu.Lock()
	defer b.conn.mu.Unlock()
	if len(b.conn.updated) == 0 {
		t.Fatal("the card was not updated after a decision made elsewhere")
	}
	last := b.conn.updated[len(b.conn.updated)-1]
	shown := cardText(cardOf(t, last))
	if last["_activity"] != activity || last["_conversation"] != conv || !strings.Contains(shown, "Rejected by teams:"+ana+" via slack") || strings.Contains(shown, "Action.Execute") {
		t.Errorf("the card now shows %s (activity %v)", shown, last["_activity"])
	}
	if len(b.conn.posted) != 1 {
		t.Errorf("%d cards posted, want the one updated", len(b.conn.posted))
	}
}

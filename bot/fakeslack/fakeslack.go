// Package fakeslack is a fake Slack Web API: an httptest.Server that serves
// the methods countersign calls, keeps the messages posted to it, records
// every call, and answers 429 (Retry-After), 5xx or
// {"ok":false,"error":…} on demand. Point a client at it with
// slack.OptionAPIURL(fake.URL() + "/"). Requests to countersign are signed
// by the caller (Sign).
//
// Tests take it through bot/bottest, which closes it when the test ends;
// cmd/chaos, a program, starts it here, as it imports no test helper.
package fakeslack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Call is one request the fake received.
type Call struct {
	Method string
	Form   url.Values
	// Body is a JSON call's body (views.open); Form is empty then.
	Body json.RawMessage
	At   time.Time
}

// Message is a message the fake holds.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   json.RawMessage
	Metadata json.RawMessage
	Updates  int
}

// Failure is an answer the fake gives instead of doing the call.
type Failure struct {
	Status     int    // an HTTP status such as 429 or 503; 0 means 200
	RetryAfter string // the Retry-After header with a 429
	SlackError string // with Status 0: {"ok":false,"error":SlackError}
	// Land makes the call take effect before the failure is answered: a post
	// that lands while its poster never learns the ts.
	Land bool
	// Stall holds the call unanswered, without its taking effect, until the
	// caller goes away (it gives up, or its process is killed).
	Stall bool
}

// Slack is the fake.
type Slack struct {
	server *httptest.Server

	mu        sync.Mutex
	calls     []Call
	messages  []*Message
	groups    map[string][]string
	failures  map[string][]Failure
	limited   map[string]time.Time // method → 429 until
	lastTS    int64
	afterPost func(Message)
	triggers  map[string]bool // trigger ids views.open used

	socketOut  chan []byte      // envelopes to push over Socket Mode
	socketAcks []map[string]any // what the client sent back
}

// Start starts a fake Slack; Close stops it.
func Start() *Slack {
	s := &Slack{groups: map[string][]string{}, failures: map[string][]Failure{}, limited: map[string]time.Time{},
		socketOut: make(chan []byte, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("/socket", s.serveSocket)
	mux.HandleFunc("/", s.serve)
	s.server = httptest.NewServer(mux)
	return s
}

// Close stops the fake and waits for the calls it is answering.
func (s *Slack) Close() { s.server.Close() }

// URL is the fake's base URL; slack-go wants it with a trailing slash.
func (s *Slack) URL() string { return s.server.URL }

// SetGroup sets a user group's members.
func (s *Slack) SetGroup(id string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = members
}

// FailNext makes the next calls of method answer the failures, in order.
func (s *Slack) FailNext(method string, failures ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], failures...)
}

// RateLimitFor answers every call of method with 429 (Retry-After: 1) for d.
func (s *Slack) RateLimitFor(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited[method] = time.Now().Add(d)
}

// AfterPost runs fn after a chat.postMessage has landed, before it is answered.
func (s *Slack) AfterPost(fn func(Message)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterPost = fn
}

// Calls returns the calls of method (all calls for "").
func (s *Slack) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of method the fake received.
func (s *Slack) Count(method string) int { return len(s.Calls(method)) }

// Messages returns copies of the top-level messages of a channel (every
// channel for ""), oldest first.
func (s *Slack) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if (channel == "" || m.Channel == channel) && m.ThreadTS == "" {
			out = append(out, *m)
		}
	}
	return out
}

// Replies returns copies of the replies in a message's thread.
func (s *Slack) Replies(channel, ts string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == ts {
			out = append(out, *m)
		}
	}
	return out
}

// Message returns a copy of the message at channel and ts.
func (s *Slack) Message(channel, ts string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.find(channel, ts); m != nil {
		return *m, true
	}
	return Message{}, false
}

// ActionIDs returns the action_ids of a message's buttons.
func (m Message) ActionIDs() []string {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(m.Blocks, &blocks)
	var ids []string
	for _, b := range blocks {
		if b.Type == "actions" {
			for _, e := range b.Elements {
				ids = append(ids, e.ActionID)
			}
		}
	}
	return ids
}

// ButtonValue returns the value of the button with actionID, or "".
func (m Message) ButtonValue(actionID string) string {
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(m.Blocks, &blocks)
	for _, b := range blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return e.Value
			}
		}
	}
	return ""
}

func (s *Slack) find(channel, ts string) *Message {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}

func (s *Slack) nextTS() string {
	now := time.Now().UnixMicro()
	if now <= s.lastTS {
		now = s.lastTS + 1
	}
	s.lastTS = now
	return fmt.Sprintf("%d.%06d", now/1e6, now%1e6)
}

func (s *Slack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/")
	var body json.RawMessage
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
	}
	_ = r.ParseForm()
	if body != nil {
		// A JSON call's fields answer like a form's, for do.
		var fields map[string]any
		_ = json.Unmarshal(body, &fields)
		for k, v := range fields {
			if str, ok := v.(string); ok {
				r.PostForm.Set(k, str)
			} else {
				b, _ := json.Marshal(v)
				r.PostForm.Set(k, string(b))
			}
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Form: r.PostForm, Body: body, At: time.Now()})
	var failure *Failure
	if until, ok := s.limited[method]; ok && time.Now().Before(until) {
		failure = &Failure{Status: http.StatusTooManyRequests, RetryAfter: "1"}
	} else if queue := s.failures[method]; len(queue) > 0 {
		failure = &queue[0]
		s.failures[method] = queue[1:]
	}
	if failure != nil && failure.Stall {
		s.mu.Unlock()
		<-r.Context().Done()
		return
	}
	if failure != nil && !failure.Land {
		s.mu.Unlock()
		s.fail(w, *failure)
		return
	}
	answer, hook, landed := s.do(method, r.PostForm)
	s.mu.Unlock()
	if hook != nil && landed != nil {
		hook(*landed)
	}
	if failure != nil {
		s.fail(w, *failure)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

func (s *Slack) fail(w http.ResponseWriter, f Failure) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Status != 0 {
		w.WriteHeader(f.Status)
		_, _ = w.Write([]byte("<html>unavailable</html>"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": f.SlackError})
}

// do performs a call with s.mu held.
func (s *Slack) do(method string, form url.Values) (map[string]any, func(Message), *Message) {
	ok := func(fields map[string]any) map[string]any {
		fields["ok"] = true
		return fields
	}
	notOK := func(code string) map[string]any { return map[string]any{"ok": false, "error": code} }
	channel := form.Get("channel")
	switch method {
	case "chat.postMessage":
		if channel == "" {
			return notOK("channel_not_found"), nil, nil
		}
		m := &Message{Channel: channel, TS: s.nextTS(), ThreadTS: form.Get("thread_ts"), Text: form.Get("text"),
			Blocks: raw(form.Get("blocks")), Metadata: raw(form.Get("metadata"))}
		s.messages = append(s.messages, m)
		return ok(map[string]any{"channel": channel, "ts": m.TS}), s.afterPost, m
	case "chat.update":
		m := s.find(channel, form.Get("ts"))
		if m == nil {
			return notOK("message_not_found"), nil, nil
		}
		m.Text, m.Blocks, m.Updates = form.Get("text"), raw(form.Get("blocks")), m.Updates+1
		if md := form.Get("metadata"); md != "" {
			m.Metadata = raw(md)
		}
		return ok(map[string]any{"channel": channel, "ts": m.TS, "text": m.Text}), nil, nil
	case "chat.delete":
		for i, m := range s.messages {
			if m.Channel == channel && m.TS == form.Get("ts") {
				s.messages = slices.Delete(s.messages, i, i+1)
				return ok(map[string]any{"channel": channel, "ts": m.TS}), nil, nil
			}
		}
		return notOK("message_not_found"), nil, nil
	case "views.open":
		// A trigger id is good for one view; Slack refuses a second.
		trigger := form.Get("trigger_id")
		if trigger == "" || s.triggers[trigger] {
			return notOK("invalid_trigger_id"), nil, nil
		}
		if s.triggers == nil {
			s.triggers = make(map[string]bool)
		}
		s.triggers[trigger] = true
		return ok(map[string]any{"view": map[string]any{"id": "V" + s.nextTS()}}), nil, nil
	case "chat.postEphemeral":
		return ok(map[string]any{"message_ts": s.nextTS()}), nil, nil
	case "conversations.history":
		return ok(s.history(form)), nil, nil
	case "conversations.replies":
		return ok(s.thread(form)), nil, nil
	case "usergroups.users.list":
		members, found := s.groups[form.Get("usergroup")]
		if !found {
			return notOK("no_such_subteam"), nil, nil
		}
		return ok(map[string]any{"users": members}), nil, nil
	case "apps.connections.open":
		return ok(map[string]any{"url": "ws" + strings.TrimPrefix(s.server.URL, "http") + "/socket"}), nil, nil
	case "auth.test":
		return ok(map[string]any{"user_id": "UBOT", "team_id": "T1"}), nil, nil
	}
	return notOK("unknown_method"), nil, nil
}

// SendSocket pushes a Socket Mode envelope to the connected client.
func (s *Slack) SendSocket(envelope any) {
	b, _ := json.Marshal(envelope)
	s.socketOut <- b
}

// SocketAck returns the client's answer to an envelope, if it has sent one.
func (s *Slack) SocketAck(envelopeID string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.socketAcks {
		if a["envelope_id"] == envelopeID {
			return a, true
		}
	}
	return nil, false
}

// serveSocket is the Socket Mode WebSocket: hello, then the pushed envelopes;
// whatever the client sends is kept as an ack.
func (s *Slack) serveSocket(w http.ResponseWriter, r *http.Request) {
	// The client sends Origin: https://api.slack.com, as it would to Slack.
	upgrader := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"type": "hello", "num_connections": 1}); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ack map[string]any
			if err := conn.ReadJSON(&ack); err != nil {
				return
			}
			s.mu.Lock()
			s.socketAcks = append(s.socketAcks, ack)
			s.mu.Unlock()
		}
	}()
	for {
		select {
		case <-done:
			return
		case <-r.Context().Done():
			return
		case msg := <-s.socketOut:
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		}
	}
}

// history answers conversations.history newest first, with metadata only
// when include_all_metadata is set, as Slack does.
func (s *Slack) history(form url.Values) map[string]any {
	limit, _ := strconv.Atoi(form.Get("limit"))
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	oldest, _ := strconv.ParseFloat(form.Get("oldest"), 64)
	withMeta := form.Get("include_all_metadata") == "1"
	var msgs []map[string]any
	for i := len(s.messages) - 1; i >= 0 && len(msgs) < limit; i-- {
		m := s.messages[i]
		if m.Channel != form.Get("channel") || m.ThreadTS != "" {
			continue
		}
		if ts, _ := strconv.ParseFloat(m.TS, 64); ts < oldest {
			continue
		}
		msg := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
		if withMeta && len(m.Metadata) > 0 {
			msg["metadata"] = m.Metadata
		}
		msgs = append(msgs, msg)
	}
	return map[string]any{"messages": msgs, "has_more": false}
}

// thread answers conversations.replies: the parent, then its replies
// oldest first, with metadata only when include_all_metadata is set.
func (s *Slack) thread(form url.Values) map[string]any {
	withMeta := form.Get("include_all_metadata") == "1"
	parent := form.Get("ts")
	var msgs []map[string]any
	for _, m := range s.messages {
		if m.Channel != form.Get("channel") || (m.TS != parent && m.ThreadTS != parent) {
			continue
		}
		msg := map[string]any{"type": "message", "ts": m.TS, "thread_ts": parent, "text": m.Text}
		if withMeta && len(m.Metadata) > 0 {
			msg["metadata"] = m.Metadata
		}
		msgs = append(msgs, msg)
	}
	return map[string]any{"messages": msgs, "has_more": false}
}

func raw(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

// Sign returns the headers Slack would send with body, signed with secret at
// time at.
func Sign(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	return h
}

// Signature returns the v0 signature of body at time at, to check that an
// answer does not echo it.
func Signature(secret string, at time.Time, body []byte) string {
	return Sign(secret, at, body).Get("X-Slack-Signature")
}

// ClickPayload returns a block_actions payload as Slack sends it when user
// clicks the button actionID with value in channel.
func ClickPayload(user, channel, actionID, value string) []byte {
	p, _ := json.Marshal(map[string]any{
		"type":      "block_actions",
		"user":      map[string]any{"id": user, "username": strings.ToLower(user)},
		"channel":   map[string]any{"id": channel},
		"container": map[string]any{"type": "message", "channel_id": channel},
		"actions": []map[string]any{{
			"type": "button", "action_id": actionID, "block_id": "countersign_decide", "value": value,
			"action_ts": strconv.FormatInt(time.Now().Unix(), 10) + ".000100",
		}},
		"response_url": "https://hooks.slack.invalid/actions/T1/1/x",
		"trigger_id":   "1.2.3",
	})
	return p
}

// ClickPayloadWithTrigger is ClickPayload with its own trigger id, which
// a modal opened from the click spends.
func ClickPayloadWithTrigger(user, channel, actionID, value, trigger string) []byte {
	var p map[string]any
	_ = json.Unmarshal(ClickPayload(user, channel, actionID, value), &p)
	p["trigger_id"] = trigger
	b, _ := json.Marshal(p)
	return b
}

// OpenedViews returns the views opened with views.open, oldest first.
func (s *Slack) OpenedViews() []json.RawMessage {
	var views []json.RawMessage
	for _, c := range s.Calls("views.open") {
		views = append(views, raw(c.Form.Get("view")))
	}
	return views
}

// SubmissionPayload returns the view_submission payload Slack sends when
// user submits view (as opened) with text typed in the input whose block and
// action ids are given.
func SubmissionPayload(user string, view json.RawMessage, blockID, actionID, text string) []byte {
	var v map[string]any
	_ = json.Unmarshal(view, &v)
	v["id"] = "V1"
	v["state"] = map[string]any{"values": map[string]any{blockID: map[string]any{
		actionID: map[string]any{"type": "plain_text_input", "value": text},
	}}}
	p, _ := json.Marshal(map[string]any{
		"type": "view_submission",
		"user": map[string]any{"id": user, "username": strings.ToLower(user)},
		"view": v,
	})
	return p
}

// ClickForm returns the form body Slack posts for an interaction payload.
func ClickForm(payload []byte) []byte {
	return []byte(url.Values{"payload": {string(payload)}}.Encode())
}

// CommandForm returns the form body Slack posts for /countersign text.
func CommandForm(user, channel, text string) []byte {
	return []byte(url.Values{
		"command": {"/countersign"}, "text": {text}, "user_id": {user}, "channel_id": {channel},
		"team_id": {"T1"}, "response_url": {"https://hooks.slack.invalid/commands/T1/1/x"}, "trigger_id": {"1.2.3"},
	}.Encode())
}

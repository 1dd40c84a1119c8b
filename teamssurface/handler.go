package teamssurface

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// maxActivity bounds an activity's body, and decideTimeout a decision
// made from a click.
const (
	maxActivity   = 256 << 10
	decideTimeout = 10 * time.Second
)

// InvokeName is the name of the invoke activity an Action.Execute sends.
const InvokeName = "adaptiveCard/action"

// Activity is the part of a Bot Framework activity the handler reads.
type Activity struct {
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ID         string `json:"id,omitempty"`
	ServiceURL string `json:"serviceUrl"`
	ReplyToID  string `json:"replyToId,omitempty"`
	From       struct {
		ID          string `json:"id"`
		AADObjectID string `json:"aadObjectId,omitempty"`
		Name        string `json:"name,omitempty"`
	} `json:"from"`
	Conversation struct {
		ID string `json:"id"`
	} `json:"conversation"`
	Value struct {
		Action struct {
			Type string `json:"type"`
			Verb string `json:"verb"`
			Data Action `json:"data"`
		} `json:"action"`
		Trigger string `json:"trigger,omitempty"`
	} `json:"value"`
}

// Handler is the bot's messaging endpoint: mount it at POST MessagesPath.
// Every activity is authenticated (401 otherwise); an adaptiveCard/action
// invoke decides and is answered with the card; any other activity is
// acknowledged and ignored.
func (t *Teams) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxActivity))
		if err != nil {
			http.Error(w, "the activity could not be read", http.StatusBadRequest)
			return
		}
		var act Activity
		if err := json.Unmarshal(body, &act); err != nil {
			// Without its serviceUrl the token cannot be checked: an
			// activity that cannot be read is not authenticated either.
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if err := t.authenticate(r.Context(), r.Header.Get("Authorization"), act.ServiceURL); err != nil {
			t.log.Warn("a Teams activity failed authentication", "error", err.Error())
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if act.Type != "invoke" || act.Name != InvokeName {
			w.WriteHeader(http.StatusOK)
			return
		}
		t.invoke(w, r.Context(), act)
	})
}

// invoke decides an Action.Execute and answers with the card as it now
// stands, saying why when the click decided nothing.
func (t *Teams) invoke(w http.ResponseWriter, ctx context.Context, act Activity) {
	a := act.Value.Action
	d := a.Data
	if a.Type != "Action.Execute" || d.RequestID == "" || (d.Verdict != store.VerdictApprove && d.Verdict != store.VerdictReject) || a.Verb != string(d.Verdict) {
		answerMessage(w, "This button is not one of countersign's. Nothing changed.")
		return
	}
	v, err := surface.Load(ctx, t.cfg.Cards, t.cfg.Review, d.RequestID, d.Round)
	switch {
	case errors.Is(err, store.ErrNotFound):
		answerMessage(w, "The request this card is for is gone. Nothing changed.")
		return
	case err != nil:
		t.log.Error("reading a clicked card's request", "request_id", d.RequestID, "error", err.Error())
		answerMessage(w, "countersign could not read the request just now. Nothing changed; try again shortly.")
		return
	}
	if !surface.Decides(v.Tool, Name) || !t.cfg.Uses(v.Request.Tool) {
		answerMessage(w, surface.NotReviewedHere("Teams").Message) // not its card: the request is not this surface's to show
		return
	}
	reviewer := approverFor(v, act.From.AADObjectID)
	if reviewer == "" {
		t.log.Warn("a Teams click from a user without an Entra object id", "request_id", d.RequestID)
		answerCard(w, card(v, "countersign could not tell who you are in Teams (no Entra object id). Nothing changed."))
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), decideTimeout)
	defer cancel()
	out, err := t.cfg.Review.Decide(dctx, approvals.Decision{
		RequestID: d.RequestID, Round: d.Round, PayloadHash: d.PayloadHash, Verdict: d.Verdict,
		DecidedBy: reviewer, Via: Via, Reason: strings.TrimSpace(d.Reason),
	})
	if err == nil {
		err = out.Err()
	}
	note := ""
	switch {
	case err != nil:
		note = approvals.RefusalFor(err).Message + " Nothing changed."
	case out.Repeat:
		note = "You had voted in this round already; nothing changed. " + out.Progress()
	case out.Counted:
		note = "Your vote is counted: " + out.Progress() + "."
	}
	if v2, err := surface.Load(dctx, t.cfg.Cards, t.cfg.Review, d.RequestID, d.Round); err == nil {
		v = v2
	}
	answerCard(w, card(v, note))
}

// approverFor is the request's approver (as its policy spells it) with the
// Entra object id, or teams:<id> when it is none of them (the decision
// refuses it), or "" when id is not one.
func approverFor(v surface.View, objectID string) string {
	id, err := identity.ParsePerson(string(identity.Teams) + ":" + objectID)
	if err != nil || objectID == "" {
		return ""
	}
	for _, a := range v.Approvers {
		if other, err := identity.ParsePerson(a); err == nil && other.Same(id) {
			return a
		}
	}
	return id.String()
}

// answerCard answers an invoke with a card that replaces the clicked one.
func answerCard(w http.ResponseWriter, c object) {
	answer(w, object{"statusCode": http.StatusOK, "type": CardType, "value": c})
}

// answerMessage answers an invoke with a message shown to the clicker.
func answerMessage(w http.ResponseWriter, s string) {
	answer(w, object{"statusCode": http.StatusOK, "type": "application/vnd.microsoft.activity.message", "value": s})
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}

package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// An approver may change a pending request's effect and approve the edited
// write (approvals.Service.ApproveWithEdit): GET …/requests/{ref}/edit shows
// the effect's top-level fields as inputs, POST records the edit.

// Field kinds of the edit form: each input is read as its field's kind in
// the original effect, never as the form says.
const (
	kindString = "string"
	kindNumber = "number"
	kindBool   = "bool"
	kindJSON   = "json" // an object, an array or null, edited as JSON text
)

// fieldValuePrefix names the form's input of a top-level field: "field.<name>".
const fieldValuePrefix = "field."

// maxEditFields bounds the inputs an edit form shows; an effect with more
// top-level fields is edited elsewhere (the form would be unusable).
const maxEditFields = 100

// editField is one top-level field of the effect, as the form shows it.
type editField struct {
	Name, Kind, Value string
}

type editPage struct {
	page
	Card   card
	Fields []editField
	// Error is why the edit was refused, with its stable code.
	Error, Code string
}

type editedPage struct {
	page
	Original, Edit store.Request
	Approved       bool
	Progress       string
	Changed        []string
}

// routeEdits adds the edit routes to mux.
func (h *Handler) routeEdits(mux *http.ServeMux) {
	mux.HandleFunc("GET "+h.prefix+"/requests/{ref}/edit", h.editForm)
	mux.HandleFunc("POST "+h.prefix+"/requests/{ref}/edit", h.edit)
}

// editFields lists the top-level fields of a snapshot with their kinds,
// sorted by name (the snapshot's canonical order).
func editFields(snapshot []byte) ([]editField, error) {
	dec := json.NewDecoder(bytes.NewReader(snapshot))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	var out []editField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		f := editField{Name: tok.(string), Kind: kindJSON, Value: string(raw)}
		switch raw[0] {
		case '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			f.Kind, f.Value = kindString, s
		case 't', 'f':
			f.Kind = kindBool
		case '{', '[', 'n':
		default:
			f.Kind = kindNumber
		}
		out = append(out, f)
	}
	return out, nil
}

// editedEffect builds the edited effect from the form: each of the
// original's fields, read as its kind; a value that is not of its kind is
// an error naming the field.
func editedEffect(fields []editField, form map[string][]string) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range fields {
		values, ok := form[fieldValuePrefix+f.Name]
		if !ok || len(values) != 1 {
			return nil, fieldError{f.Name, "is missing from the form"}
		}
		v := values[0]
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(f.Name)
		buf.Write(name)
		buf.WriteByte(':')
		switch f.Kind {
		case kindString:
			s, _ := json.Marshal(v)
			buf.Write(s)
		case kindBool:
			if v != "true" && v != "false" {
				return nil, fieldError{f.Name, "must be true or false"}
			}
			buf.WriteString(v)
		case kindNumber:
			if v == "" || !json.Valid([]byte(v)) || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
				return nil, fieldError{f.Name, "must be a number"}
			}
			buf.WriteString(v)
		default:
			if !json.Valid([]byte(v)) {
				return nil, fieldError{f.Name, "must be JSON"}
			}
			buf.WriteString(v)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// fieldError is a form value that is not of its field's kind.
type fieldError struct{ field, problem string }

func (e fieldError) Error() string {
	return "The field " + strconv.Quote(e.field) + " " + e.problem + "."
}

// editable reads a request the reviewer may see and edit; ok false has
// answered. Only a pending request has a form.
func (h *Handler) editable(w http.ResponseWriter, r *http.Request, s claims) (card, []editField, bool) {
	req, ok := h.visible(w, r, s, r.PathValue("ref"))
	if !ok {
		return card{}, nil, false
	}
	c, err := h.card(r.Context(), req)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return card{}, nil, false
	}
	fields, err := editFields(req.Snapshot)
	switch {
	case err != nil:
		h.refuse(w, "reading a request's effect", err)
		return card{}, nil, false
	case len(fields) > maxEditFields:
		h.fail(w, http.StatusUnprocessableEntity, "This effect has too many fields to edit here.")
		return card{}, nil, false
	}
	return c, fields, true
}

// editForm shows the effect's top-level fields as inputs.
func (h *Handler) editForm(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	c, fields, ok := h.editable(w, r, s)
	if !ok {
		return
	}
	p := editPage{page: h.page("Edit and approve: "+cmp.Or(c.Request.Summary, c.Request.Tool), s), Card: c, Fields: fields}
	if !c.Pending() {
		p.Code, p.Error = approvals.CodeAlreadyDecided, "This request is "+string(c.Request.Status)+", so it can no longer be edited."
	}
	h.render(w, http.StatusOK, "edit", p)
}

// edit records an approval with edit, then shows what it made.
func (h *Handler) edit(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	c, fields, ok := h.editable(w, r, s)
	if !ok {
		return
	}
	f := r.PostForm
	round, err := strconv.Atoi(f.Get(fieldRound))
	if err != nil || f.Get(fieldPayloadHash) == "" {
		h.fail(w, http.StatusBadRequest, "The form lacks the round or payload hash that an edit needs.")
		return
	}
	// The form shows the values sent back on a refusal, so a reviewer
	// corrects one field without typing the others again.
	shown := make([]editField, len(fields))
	for i, fl := range fields {
		shown[i] = fl
		if v, ok := f[fieldValuePrefix+fl.Name]; ok && len(v) == 1 {
			shown[i].Value = v[0]
		}
	}
	again := func(status int, code, message string) {
		h.render(w, status, "edit", editPage{page: h.page("Edit and approve: "+cmp.Or(c.Request.Summary, c.Request.Tool), s),
			Card: c, Fields: shown, Code: code, Error: message})
	}
	effect, err := editedEffect(fields, f)
	if fe := (fieldError{}); errors.As(err, &fe) {
		again(http.StatusUnprocessableEntity, approvals.CodeInvalidRequest, fe.Error())
		return
	}
	out, err := h.svc.ApproveWithEdit(r.Context(), approvals.Edit{RequestID: c.Request.ID, Round: round,
		PayloadHash: f.Get(fieldPayloadHash), Effect: effect, EditedBy: s.User, Via: Via})
	if err != nil {
		ref := approvals.RefusalFor(err)
		switch ref.Code {
		case approvals.CodeInternal, approvals.CodeUnavailable:
			h.refuse(w, "console edit", err)
		default:
			status := http.StatusUnprocessableEntity
			switch ref.Code {
			case approvals.CodeAlreadyDecided, approvals.CodeStaleCard:
				status = http.StatusConflict
			case approvals.CodeNotApprover, approvals.CodeNoLongerApprover, approvals.CodeSelfApproval, approvals.CodeDeniedByPolicy:
				status = http.StatusForbidden
			}
			again(status, ref.Code, ref.Message)
		}
		return
	}
	h.render(w, http.StatusOK, "edited", editedPage{page: h.page("Edited and approved", s),
		Original: out.Original, Edit: out.Edit, Approved: out.Approved, Progress: out.Progress(), Changed: out.Changed})
}

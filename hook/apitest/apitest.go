// Package apitest holds the hook to its OpenAPI document in tests: Conform
// wraps a handler so that every response it gives, and every request it
// accepts, is validated against the document (with libopenapi-validator),
// and records which operation, status and error code each answer was, so a
// test can tell what the document promises that nothing exercised.
package apitest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
)

// Answer is one (operation, status, error code) the hook answered: the
// operation as "METHOD /path/{template}", the code "" for a success.
type Answer struct {
	Operation string
	Status    int
	Code      string
}

func (a Answer) String() string {
	if a.Code == "" {
		return fmt.Sprintf("%s → %d", a.Operation, a.Status)
	}
	return fmt.Sprintf("%s → %d %s", a.Operation, a.Status, a.Code)
}

// Document is a parsed OpenAPI document and its validator. Build one per
// document with Load; it is safe for concurrent use.
type Document struct {
	raw        []byte
	mu         sync.Mutex // the validator is not documented as safe for concurrent use
	validator  validator.Validator
	operations []operation
}

type operation struct {
	method, template string
	match            *regexp.Regexp
}

// Load parses and validates an OpenAPI document; a document that is not
// valid OpenAPI fails the test.
func Load(t testing.TB, raw []byte) *Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(raw)
	if err != nil {
		t.Fatalf("the OpenAPI document does not parse: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("the OpenAPI document does not build: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("the OpenAPI document is not valid OpenAPI: %s: %s", e.Message, e.Reason)
		}
		t.FailNow()
	}
	d := &Document{raw: raw, validator: v}
	for _, op := range d.Operations() {
		method, template, _ := strings.Cut(op, " ")
		pattern := regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(template), `[^/]+`)
		d.operations = append(d.operations, operation{method, template, regexp.MustCompile("^" + pattern + "$")})
	}
	return d
}

// Operations lists the document's operations as "METHOD /path", sorted.
func (d *Document) Operations() []string {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(d.raw, &doc); err != nil {
		panic(err)
	}
	var ops []string
	for path, item := range doc.Paths {
		for method := range item {
			if method != "parameters" {
				ops = append(ops, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(ops)
	return ops
}

// Promised lists every (operation, status, code) the document says the hook
// may answer: each success, and each error status with each code its schema
// allows.
func (d *Document) Promised() []Answer {
	var doc map[string]any
	if err := json.Unmarshal(d.raw, &doc); err != nil {
		panic(err)
	}
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		for m["$ref"] != nil {
			var cur any = doc
			for _, part := range strings.Split(strings.TrimPrefix(m["$ref"].(string), "#/"), "/") {
				cur = cur.(map[string]any)[part]
			}
			m = cur.(map[string]any)
		}
		return m
	}
	var out []Answer
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			for status, r := range op.(map[string]any)["responses"].(map[string]any) {
				n, _ := strconv.Atoi(status)
				operation := strings.ToUpper(method) + " " + path
				codes := errorCodes(resolve(r))
				if len(codes) == 0 {
					out = append(out, Answer{operation, n, ""})
				}
				for _, c := range codes {
					out = append(out, Answer{operation, n, c})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Answer) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// errorCodes reads the code enum an error response narrows its body to.
func errorCodes(response map[string]any) []string {
	content, _ := response["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	schema, _ := media["schema"].(map[string]any)
	all, _ := schema["allOf"].([]any)
	var codes []string
	for _, part := range all {
		p, _ := part.(map[string]any)
		props, _ := p["properties"].(map[string]any)
		errObj, _ := props["error"].(map[string]any)
		errProps, _ := errObj["properties"].(map[string]any)
		code, _ := errProps["code"].(map[string]any)
		enum, _ := code["enum"].([]any)
		for _, c := range enum {
			codes = append(codes, c.(string))
		}
	}
	return codes
}

// ErrorCodes returns the ErrorCode schema's enum: every code the document
// knows.
func (d *Document) ErrorCodes() []string {
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(d.raw, &doc); err != nil {
		panic(err)
	}
	return doc.Components.Schemas.ErrorCode.Enum
}

// Recorder collects the answers a conforming handler gave.
type Recorder struct {
	mu   sync.Mutex
	seen map[Answer]bool
}

// Seen returns the answers recorded so far.
func (r *Recorder) Seen() map[Answer]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{seen: map[Answer]bool{}} }

// Conform wraps h: each response is validated against d, and so is each
// request h accepted (2xx); refused requests may well be invalid, that is
// why they were refused. A mismatch fails t. Every answer is recorded in rec
// (nil: nowhere).
func Conform(t testing.TB, d *Document, rec *Recorder, h http.Handler) http.Handler {
	if rec == nil {
		rec = NewRecorder()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("conformance: reading the request body: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		capture := &capturing{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(capture, r)
		if capture.status == 499 || r.Context().Err() != nil {
			return // the client went away; nothing was answered
		}
		d.check(t, rec, r, body, capture)
	})
}

func (d *Document) check(t testing.TB, rec *Recorder, r *http.Request, body []byte, c *capturing) {
	op := d.operationOf(r)
	if op == "" {
		checkOffTheDocument(t, r, c)
		return
	}
	answer := Answer{Operation: op, Status: c.status}
	if c.status >= 400 {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(c.body.Bytes(), &e)
		answer.Code = e.Error.Code
	}
	rec.mu.Lock()
	rec.seen[answer] = true
	rec.mu.Unlock()

	replay := r.Clone(r.Context())
	replay.Body = io.NopCloser(bytes.NewReader(body))
	resp := &http.Response{
		StatusCode: c.status, Header: c.Header().Clone(),
		Body: io.NopCloser(bytes.NewReader(c.body.Bytes())), Request: replay,
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok, errs := d.validator.ValidateHttpResponse(replay, resp); !ok {
		for _, e := range errs {
			t.Errorf("conformance: %s: the response does not match the OpenAPI document: %s: %s (body %.300s)", answer, e.Message, detail(e.Reason, e.SchemaValidationErrors), c.body.String())
		}
	}
	if c.status < 300 && r.Method == http.MethodPost {
		replay.Body = io.NopCloser(bytes.NewReader(body))
		if ok, errs := d.validator.ValidateHttpRequest(replay); !ok {
			for _, e := range errs {
				t.Errorf("conformance: %s: the hook accepted a request the OpenAPI document refuses: %s: %s (body %.300s)", answer, e.Message, detail(e.Reason, e.SchemaValidationErrors), body)
			}
		}
	}
}

// checkOffTheDocument checks the answer to a call no operation describes:
// an unknown path is 404 not_found, a method the path does not take 405
// method_not_allowed with Allow, each the one error envelope (the
// document's info says so) with the Request-Id it was given.
func checkOffTheDocument(t testing.TB, r *http.Request, c *capturing) {
	var e struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(c.body.Bytes()))
	dec.DisallowUnknownFields()
	err := dec.Decode(&e)
	want := map[int]string{http.StatusNotFound: "not_found", http.StatusMethodNotAllowed: "method_not_allowed"}[c.status]
	switch {
	case err != nil || want == "" || e.Error.Code != want || e.Error.Message == "":
		t.Errorf("conformance: %s %s is not in the OpenAPI document, and answered %d %s, not the envelope's 404 not_found or 405 method_not_allowed", r.Method, r.URL.Path, c.status, c.body.String())
	case e.Error.RequestID == "" || e.Error.RequestID != c.Header().Get("Request-Id"):
		t.Errorf("conformance: %s %s: request_id %q, Request-Id header %q", r.Method, r.URL.Path, e.Error.RequestID, c.Header().Get("Request-Id"))
	case c.status == http.StatusMethodNotAllowed && c.Header().Get("Allow") == "":
		t.Errorf("conformance: %s %s: 405 without Allow", r.Method, r.URL.Path)
	}
}

func detail[E any](reason string, schemaErrs []E) string {
	if len(schemaErrs) == 0 {
		return reason
	}
	return fmt.Sprintf("%s %+v", reason, schemaErrs)
}

// operationOf names the document's operation r is for, or "".
func (d *Document) operationOf(r *http.Request) string {
	for _, op := range d.operations {
		if op.method == r.Method && op.match.MatchString(r.URL.EscapedPath()) {
			return op.method + " " + op.template
		}
	}
	return ""
}

// capturing passes a response through and keeps a copy of it.
type capturing struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capturing) WriteHeader(status int) {
	c.status = status
	c.ResponseWriter.WriteHeader(status)
}

func (c *capturing) Write(b []byte) (int, error) {
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

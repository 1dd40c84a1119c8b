package surface_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// A preview's answer is taken only in its two shapes, within its bounds;
// anything else is a failed preview that says why.
func TestParsePreview(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		status     int
		want       string // "ready" or the failure's reason, a prefix
	}{
		{"changes", `{"changes":[{"field":"a","before":1,"after":{"x":[1, 2]}}]}`, 200, "ready"},
		{"no changes", `{"changes":[]}`, 200, "ready"},
		{"summary", `{"summary":" Closes T-1 "}`, 201, "ready"},
		{"status", `{"summary":"x"}`, 302, "the preview endpoint answered 302"},
		{"both", `{"changes":[],"summary":"x"}`, 200, "the answer has both changes and a summary"},
		{"neither", `{}`, 200, "the answer has neither changes nor a summary"},
		{"unknown member", `{"summary":"x","extra":1}`, 200, "the answer is not {"},
		{"unknown change member", `{"changes":[{"field":"a","old":1}]}`, 200, "the answer is not {"},
		{"duplicate", `{"summary":"x","summary":"y"}`, 200, "the answer is not JSON"},
		{"two values", `{"summary":"x"} {}`, 200, "the answer is not JSON"},
		{"not an object", `["summary"]`, 200, "the answer is not {"},
		{"NUL", `{"summary":"a\u0000b"}`, 200, "the answer holds U+0000 at /summary"},
		{"empty summary", `{"summary":"  "}`, 200, "the summary must be 1 to 2000 characters"},
		{"long summary", `{"summary":"` + strings.Repeat("é", 2001) + `"}`, 200, "the summary must be 1 to 2000 characters"},
		{"no field", `{"changes":[{"before":1,"after":2}]}`, 200, "change 0: field must be 1 to 200 characters"},
		{"long field", `{"changes":[{"field":"` + strings.Repeat("f", 201) + `"}]}`, 200, "change 0: field must be"},
		{"too big", `{"summary":"` + strings.Repeat("x", surface.MaxPreviewBody) + `"}`, 200, "the answer is larger than 64 KiB"},
	} {
		p := surface.ParsePreview(c.status, []byte(c.body), nil)
		got := string(p.State)
		if p.State == store.PreviewFailed {
			got = p.Reason
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q; want %q", c.name, got, c.want)
		}
	}
	if p := surface.ParsePreview(0, nil, errors.New("dial tcp 127.0.0.1:9: connect: connection refused")); p.State != store.PreviewFailed ||
		!strings.Contains(p.Reason, "did not answer: dial tcp") {
		t.Errorf("a failed call = %+v", p)
	}
	p := surface.ParsePreview(200, []byte(`{"changes":[{"field":"a","after":{ "x" : [1, 2] }}]}`), nil)
	if len(p.Changes) != 1 || string(p.Changes[0].Before) != "null" || string(p.Changes[0].After) != `{"x":[1,2]}` {
		t.Errorf("changes = %+v", p.Changes)
	}
}

// No answer makes ParsePreview panic, and what it takes is within bounds.
func FuzzParsePreview(f *testing.F) {
	for _, seed := range []string{`{"changes":[{"field":"a","before":1,"after":2}]}`, `{"summary":"x"}`, `{"changes":[{"field":"","after":null}]}`, `{`, `null`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		p := surface.ParsePreview(200, []byte(body), nil)
		switch p.State {
		case store.PreviewReady:
			if (p.Summary == "") == (p.Changes == nil) || len(p.Changes) > surface.MaxPreviewChanges {
				t.Fatalf("ready preview out of bounds: %+v", p)
			}
			for _, c := range p.Changes {
				if c.Field == "" || c.Before == nil || c.After == nil {
					t.Fatalf("change out of bounds: %+v", c)
				}
			}
		case store.PreviewFailed:
			if p.Reason == "" {
				t.Fatal("a failure without a reason")
			}
		default:
			t.Fatalf("state %q", p.State)
		}
	})
}

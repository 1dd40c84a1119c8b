package misleading

import (
	"strings"
	"testing"
)

// Each kind of misleading text is found where it is, in values and member
// names, and plain text (accents, one script, other scripts alone) is not.
func TestFind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"plain", `{"invoice":"inv_8841","note":"café crème, Ünïcödé","city":"Москва","greek":"αβγ","n":4200,"list":["a","b"]}`, nil},
		{"trojan source", `{"note":"refund \u202Eeno\u202C only"}`, []string{"/note holds bidirectional controls (U+202E, U+202C)"}},
		{"isolate in a list", `{"lines":["ok","\u2067x\u2069"]}`, []string{"/lines/1 holds bidirectional controls (U+2067, U+2069)"}},
		{"zero width", `{"iban":"DE89\u200B3704"}`, []string{"/iban holds invisible characters (U+200B)"}},
		{"soft hyphen and bom", `{"to":"ana\u00AD\uFEFF"}`, []string{"/to holds invisible characters (U+00AD, U+FEFF)"}},
		{"cyrillic a in latin", `{"payee":"p\u0430ypal"}`, []string{`/payee mixes scripts in "pаypal" (Latin and Cyrillic)`}},
		{"greek omicron", `{"host":"g\u03BFogle.com"}`, []string{`/host mixes scripts in "gοogle" (Latin and Greek)`}},
		{"member name", `{"am\u200Bount":1}`, []string{"the name of /am\u200bount holds invisible characters (U+200B)"}},
		{"pointer escaping", `{"a/b":{"c~d":"x\u200Dy"}}`, []string{"/a~1b/c~0d holds invisible characters (U+200D)"}},
		{"not json", `{"a":`, nil},
	} {
		var got []string
		for _, f := range Find([]byte(c.doc)) {
			got = append(got, f.String())
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: %q, want it to begin %q", c.name, got[i], c.want[i])
			}
		}
	}
}

// An effect with misleading text everywhere reports a bounded number.
func TestFindIsBounded(t *testing.T) {
	t.Parallel()
	doc := "[" + strings.Repeat(`"\u200B",`, 1000) + `"x"]`
	if n := len(Find([]byte(doc))); n != maxFindings {
		t.Errorf("%d findings, want %d", n, maxFindings)
	}
}

// Whatever the bytes, Find answers, and every finding names a pointer of
// the document and a kind.
func FuzzFind(f *testing.F) {
	for _, seed := range []string{`{"a":"p\u0430y"}`, `["\u202E"]`, `"x"`, `{"a/b~":["\u200B",{"c":"d"}]}`, `{`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		for _, finding := range Find(doc) {
			if finding.Kind != Bidi && finding.Kind != Invisible && finding.Kind != MixedScript {
				t.Fatalf("a finding of kind %q", finding.Kind)
			}
			if finding.Pointer != "" && finding.Pointer[0] != '/' {
				t.Fatalf("pointer %q", finding.Pointer)
			}
		}
	})
}

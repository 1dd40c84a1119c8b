package intentkey

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// canonicalSeeds are texts at the edges of RFC 8785: member order by UTF-16
// code units (a character past U+FFFF before U+E000…U+FFFF), escapes and
// surrogates, numbers at every form, nesting, and texts both must refuse.
var canonicalSeeds = []string{
	`{"b":1,"a":2}`, `{"a":{"d":[3,{"z":0,"y":1}],"c":2},"b":[]}`, `{}`, `[]`, ` [ 1 , 2 ] `,
	`{"\ue000":1,"\ud83d\ude00":2,"a":3}`, `{"😀":1,"":2,"é":3}`,
	`"a\"b\\c\/d\b\f\n\r\t\u0000\u001f\u007f\u00e9"`, `"\ud800"`, `"\udc00\ud800"`, `"\ud800\u0041"`,
	`"\u00"`, `"\x"`, "\"\x01\"", "\"\xff\"", "\"\xed\xa0\x80\"", `"abc`,
	`0`, `-0`, `-0.0`, `1e21`, `1e20`, `123456789012345`, `1234567890123456789`, `9007199254740993`,
	`0.000001`, `1e-7`, `1.5E+3`, `1e400`, `1e-400`, `01`, `1.`, `.5`, `+1`, `-`, `1e`, `0x10`,
	`true`, `false`, `null`, `tru`, `nul l`, `[1,]`, `[,1]`, `{"a":1,}`, `{"a" 1}`, `{"a":1 "b":2}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `[1"a"]`, `[1{}]`, `{"a":[}`, `1 2`, `"x" y`, ``, `   `,
	"[\u00e9]", strings.Repeat("[", 30) + strings.Repeat("]", 30),
	`{"amount_cents":1250,"currency":"usd","customer_id":"cus_1","lines":[{"qty":2,"sku":"A-1"}]}`,
}

// TestCanonicalizeAgreesWithTheLibrary holds Canonicalize to the RFC 8785
// library on the seeds: the same bytes, or both refuse.
func TestCanonicalizeAgreesWithTheLibrary(t *testing.T) {
	for _, text := range canonicalSeeds {
		agree(t, []byte(text))
	}
}

// FuzzCanonicalize holds Canonicalize to the RFC 8785 library on any text.
// The seeds run with every `go test`; `go test -fuzz FuzzCanonicalize`
// searches further.
func FuzzCanonicalize(f *testing.F) {
	for _, text := range canonicalSeeds {
		f.Add([]byte(text))
	}
	f.Fuzz(func(t *testing.T, text []byte) { agree(t, text) })
}

func agree(t *testing.T, text []byte) {
	t.Helper()
	got, err := Canonicalize(text)
	want, wantErr := jcs.Transform(text)
	switch {
	case (err == nil) != (wantErr == nil):
		t.Fatalf("Canonicalize(%q) = %q, %v; the library: %q, %v", text, got, err, want, wantErr)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("Canonicalize(%q) = %q; the library: %q", text, got, want)
	}
}

// BenchmarkCanonicalize compares Canonicalize with the RFC 8785 library on
// an effect of the size and shape agents send.
func BenchmarkCanonicalize(b *testing.B) {
	effect := []byte(`{"customer_id":"cus_4QFJOjw2pOmAGJ","amount_cents":1250,"currency":"usd",` +
		`"reason":"duplicate charge on invoice in_1NqTQk","lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)
	b.Run("countersign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Canonicalize(effect); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jcs.Transform(effect); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package intentkey

import (
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// jsonNumber is the RFC 8259 number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FuzzExactNumbers checks CheckNumber against exact arithmetic: a JSON
// number is accepted iff the rational value of the text written equals the
// rational value of the text RFC 8785 (the library, on the literal alone)
// writes for it, and, written as a plain integer, it lies within ±2^53.
// The seeds run with every `go test`; `go test -fuzz FuzzExactNumbers`
// searches further.
func FuzzExactNumbers(f *testing.F) {
	for _, tt := range numberCases {
		f.Add(tt.literal)
	}
	f.Fuzz(func(t *testing.T, literal string) {
		if !jsonNumber.MatchString(literal) {
			return
		}
		want, ok := exactByRationals(t, literal)
		if !ok {
			return
		}
		err := CheckNumber(literal, "/n")
		if got := err == nil; got != want {
			t.Fatalf("CheckNumber(%s) = %v; exact arithmetic says accepted = %v", shown(literal), err, want)
		}
		// The scan of a whole value agrees, and names the element.
		var n *NumberError
		if err := CheckNumbers([]byte(`[true,"`+literal+`",`+literal+`]`), ""); (err == nil) != want || (err != nil && (!errors.As(err, &n) || n.Pointer != "/2")) {
			t.Fatalf("CheckNumbers([…, %s]) = %v; accepted should be %v", shown(literal), err, want)
		}
	})
}

// exactByRationals decides a JSON number literal with math/big alone.
// ok is false for a literal with an exponent of 10^±100000 or more, where
// big.Rat spends too long for a fuzz loop (numberCases holds such literals
// with their answers).
func exactByRationals(t *testing.T, literal string) (accepted, ok bool) {
	if !strings.ContainsAny(literal, ".eE") {
		n, ok := new(big.Int).SetString(literal, 10)
		if !ok {
			t.Fatalf("big.Int cannot read %s", literal)
		}
		return n.CmpAbs(big.NewInt(1<<53)) <= 0, true
	}
	canonical, err := jcs.Transform([]byte(literal))
	if err != nil {
		return false, true // out of range: RFC 8785 writes nothing
	}
	if _, exp, found := strings.Cut(strings.ToLower(literal), "e"); found && len(strings.TrimLeft(exp, "+-0")) > 5 {
		return false, false
	}
	written, ok := new(big.Rat).SetString(literal)
	if !ok {
		t.Fatalf("big.Rat cannot read %s", shown(literal))
	}
	denoted, ok := new(big.Rat).SetString(string(canonical))
	if !ok {
		t.Fatalf("big.Rat cannot read RFC 8785's %s", canonical)
	}
	return written.Cmp(denoted) == 0, true
}

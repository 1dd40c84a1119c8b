package intentkey

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// maxSafeInteger bounds a number written as a plain integer: every JSON
// reader (JavaScript's included) holds each integer up to it exactly, so an
// id past it is refused whatever its value, not only when it is odd.
const maxSafeInteger = 1 << 53

// NumberError is a JSON number the key scheme refuses: its RFC 8785 form
// would denote another value, or none, so the reviewer, the key and the
// provider would not all read the value the agent wrote.
type NumberError struct {
	Pointer   string // where the number is, as a JSON Pointer (RFC 6901)
	Literal   string // the number as written
	Canonical string // what RFC 8785 writes for an inexact number
	reason    numberReason
}

type numberReason int

const (
	beyondSafeInteger numberReason = iota + 1
	outOfRange
	inexact
)

func (e *NumberError) Error() string {
	at := e.Pointer
	if at == "" {
		at = "the top level"
	}
	switch e.reason {
	case beyondSafeInteger:
		return fmt.Sprintf("the integer %s at %s is beyond ±2^53, where integers are not all exact; send it as a string", shown(e.Literal), at)
	case outOfRange:
		return fmt.Sprintf("the number %s at %s is out of range; send it as a string", shown(e.Literal), at)
	}
	return fmt.Sprintf("the number %s at %s is not exact: RFC 8785 writes it as %s; send it as a string", shown(e.Literal), at, e.Canonical)
}

// shown keeps a long literal from filling a message.
func shown(literal string) string {
	if len(literal) <= 40 {
		return literal
	}
	return fmt.Sprintf("%s… (%d characters)", literal[:32], len(literal))
}

// CheckNumber reports whether literal, a JSON number, keeps its value in
// RFC 8785 form: the decimal value of the text RFC 8785 writes for it must
// equal the decimal value written (1.0, 1e2, 0.1 and -0 do; 1e-400 and
// 9007199254740993.0 do not), and a number written as a plain integer must
// lie within ±2^53. The error, at pointer, is a *NumberError.
func CheckNumber(literal, pointer string) error {
	canonical, reason := checkNumber(literal)
	if reason == 0 {
		return nil
	}
	return &NumberError{Pointer: pointer, Literal: literal, Canonical: canonical, reason: reason}
}

// checkNumber is CheckNumber without the error: the RFC 8785 form when it
// had to be computed, and why the literal is refused, or 0.
func checkNumber(literal string) (canonical string, reason numberReason) {
	if !strings.ContainsAny(literal, ".eE") {
		n, err := strconv.ParseInt(literal, 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return "", beyondSafeInteger
		}
		return "", 0
	}
	f, err := strconv.ParseFloat(literal, 64)
	if err != nil || math.IsInf(f, 0) {
		// ParseFloat fails here only on overflow: underflow is 0, no error.
		return "", outOfRange
	}
	canonical, err = jcs.NumberToJSON(f)
	if err != nil {
		return "", outOfRange
	}
	if canonical != literal && !sameDecimal(literal, canonical) {
		return canonical, inexact
	}
	return canonical, 0
}

// sameDecimal reports whether two JSON number literals denote the same
// decimal value. -0 is 0.
func sameDecimal(a, b string) bool {
	x, y := parseDecimal(a), parseDecimal(b)
	if x.huge || y.huge {
		// An exponent past ±2^60 leaves a nonzero value no float64 can
		// approach, so it can equal no RFC 8785 output.
		return false
	}
	if x.digits == "" || y.digits == "" {
		return x.digits == y.digits
	}
	return x.negative == y.negative && x.digits == y.digits && x.exponent == y.exponent
}

// decimal is a number's value as digits × 10^exponent, the digits without
// leading or trailing zeros ("" for zero).
type decimal struct {
	negative bool
	digits   string
	exponent int64
	huge     bool // a nonzero value whose exponent is out of reach
}

// parseDecimal reads a JSON number literal exactly.
func parseDecimal(s string) decimal {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.negative, s = true, s[1:]
	}
	mantissa, exp, hasExp := s, "", false
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mantissa, exp, hasExp = s[:i], s[i+1:], true
	}
	integer, fraction, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(integer+fraction, "0")
	trimmed := strings.TrimRight(digits, "0")
	d.digits = trimmed
	if d.digits == "" {
		return d
	}
	const limit = 1 << 60
	var e int64
	if hasExp {
		var err error
		if e, err = strconv.ParseInt(exp, 10, 64); err != nil || e > limit || e < -limit {
			d.huge = true
			return d
		}
	}
	// Each fraction digit divides by 10, each trailing zero dropped
	// multiplies by 10; a literal's length is far below 2^60.
	d.exponent = e - int64(len(fraction)) + int64(len(digits)-len(trimmed))
	return d
}

// CheckNumbers checks every number in value, a well-formed JSON value whose
// JSON Pointer is pointer, with CheckNumber, and returns the first refused
// in document order as a *NumberError.
func CheckNumbers(value []byte, pointer string) error {
	if !anyRefused(value) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	return numbersIn(dec, pointer)
}

// anyRefused scans well-formed JSON for a number CheckNumber refuses,
// without decoding it: most values have none, and then this is all the work.
func anyRefused(value []byte) bool {
	for i := 0; i < len(value); {
		switch c := value[i]; {
		case c == '"':
			for i++; i < len(value) && value[i] != '"'; i++ {
				if value[i] == '\\' {
					i++
				}
			}
			i++
		case c == '-' || ('0' <= c && c <= '9'):
			start := i
			for i < len(value) && strings.IndexByte("+-0123456789.eE", value[i]) >= 0 {
				i++
			}
			if _, reason := checkNumber(string(value[start:i])); reason != 0 {
				return true
			}
		default:
			i++
		}
	}
	return false
}

// numbersIn checks the numbers of the value dec reads next, at pointer.
func numbersIn(dec *json.Decoder, pointer string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("reading numbers: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := pointer + "/" + strconv.Itoa(i)
			if tok == '{' {
				name, err := dec.Token()
				if err != nil {
					return fmt.Errorf("reading numbers: %w", err)
				}
				child = pointer + "/" + escapePointer(name.(string))
			}
			if err := numbersIn(dec, child); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return fmt.Errorf("reading numbers: %w", err)
		}
	case json.Number:
		return CheckNumber(tok.String(), pointer)
	}
	return nil
}

// escapePointer writes a member name as a JSON Pointer reference token.
func escapePointer(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

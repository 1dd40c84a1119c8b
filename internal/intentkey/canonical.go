package intentkey

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// maxDepth is how deeply arrays and objects may nest, the RFC 8785
// library's own limit (the hook refuses far less deep effects first).
const maxDepth = 10000

// Canonicalize returns the RFC 8785 (JCS) form of one JSON text: members
// sorted by their names' UTF-16 code units, strings and numbers written as
// ECMAScript writes them, no insignificant whitespace. It writes exactly
// what the RFC 8785 library (github.com/gowebpki/jcs) writes, and refuses
// what it refuses (FuzzCanonicalize holds the two together), in one pass
// over the text: intake canonicalizes every effect, and the library's
// tree of nodes and strings cost as much as the rest of decoding an intent.
func Canonicalize(text []byte) ([]byte, error) {
	c := canonicalizer{in: text, out: make([]byte, 0, len(text))}
	c.skipSpace()
	if err := c.value(0); err != nil {
		return nil, err
	}
	c.skipSpace()
	if c.pos < len(c.in) {
		return nil, c.errorf("text after the value")
	}
	return c.out, nil
}

// canonicalizer writes the canonical form of in to out as it reads it. An
// object's members are written in the order they come, then rewritten in
// sorted order when they were not already in it.
type canonicalizer struct {
	in      []byte
	pos     int
	out     []byte
	members []member // the members of every object being read, innermost last
	scratch []byte   // an object's members while they are rewritten
}

// member is one object member as written to out: `"name":value` from start
// to end, and its name as read (escapes resolved), which orders it.
type member struct {
	name       []byte
	start, end int
}

func (c *canonicalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", c.pos, fmt.Sprintf(format, args...))
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

// expect consumes b after any whitespace.
func (c *canonicalizer) expect(b byte) error {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return c.errorf("expected %q, the text ended", b)
	}
	if c.in[c.pos] != b {
		return c.errorf("expected %q", b)
	}
	c.pos++
	return nil
}

// value writes the value at pos; depth is how many arrays and objects hold it.
func (c *canonicalizer) value(depth int) error {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return c.errorf("expected a value, the text ended")
	}
	switch c.in[c.pos] {
	case '{', '[':
		if depth+1 > maxDepth {
			return c.errorf("nested more than %d deep", maxDepth)
		}
		if c.in[c.pos] == '{' {
			return c.object(depth + 1)
		}
		return c.array(depth + 1)
	case '"':
		_, err := c.str()
		return err
	default:
		return c.scalar()
	}
}

func (c *canonicalizer) array(depth int) error {
	c.pos++ // [
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos < len(c.in) && c.in[c.pos] == ']' {
			c.pos++
			c.out = append(c.out, ']')
			return nil
		}
		if err := c.expect(','); err != nil {
			return err
		}
		c.out = append(c.out, ',')
	}
}

func (c *canonicalizer) object(depth int) error {
	c.pos++ // {
	c.out = append(c.out, '{')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	first, body := len(c.members), len(c.out)
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return c.errorf("expected a member name")
		}
		start := len(c.out)
		name, err := c.str()
		if err != nil {
			return err
		}
		if err := c.expect(':'); err != nil {
			return err
		}
		c.out = append(c.out, ':')
		if err := c.value(depth); err != nil {
			return err
		}
		c.members = append(c.members, member{name: name, start: start, end: len(c.out)})
		c.skipSpace()
		if c.pos < len(c.in) && c.in[c.pos] == '}' {
			c.pos++
			break
		}
		if err := c.expect(','); err != nil {
			return err
		}
		c.out = append(c.out, ',')
	}
	ms := c.members[first:]
	if !slices.IsSortedFunc(ms, compareMembers) {
		slices.SortFunc(ms, compareMembers)
		c.scratch = append(c.scratch[:0], c.out[body:]...)
		c.out = c.out[:body]
		for i, m := range ms {
			if i > 0 {
				c.out = append(c.out, ',')
			}
			c.out = append(c.out, c.scratch[m.start-body:m.end-body]...)
		}
	}
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(ms[i-1].name, ms[i].name) {
			return fmt.Errorf("duplicate member name %q", ms[i].name)
		}
	}
	c.members = c.members[:first]
	c.out = append(c.out, '}')
	return nil
}

// compareMembers orders members by their names' UTF-16 code units.
func compareMembers(a, b member) int { return compareUTF16(a.name, b.name) }

// compareUTF16 compares two UTF-8 texts as sequences of UTF-16 code units.
// That is their byte order, except that a character past U+FFFF (a
// surrogate pair, from 0xD800) sorts before U+E000 to U+FFFF.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua < ub {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Units is r's UTF-16 code units, the first in the high half, so that
// comparing two of them compares the units in order.
func utf16Units(r rune) uint32 {
	if r < 0x10000 {
		return uint32(r) << 16
	}
	hi, lo := utf16.EncodeRune(r)
	return uint32(hi)<<16 | uint32(lo)
}

// str writes the string at pos as RFC 8785 writes it and returns it as read
// (escapes resolved). A string without escapes or control characters is
// written as it came.
func (c *canonicalizer) str() ([]byte, error) {
	start := c.pos + 1
	ascii := true
	for i := start; i < len(c.in); i++ {
		switch b := c.in[i]; {
		case b == '"':
			raw := c.in[start:i]
			if !ascii && !utf8.Valid(raw) {
				return nil, c.errorf("a string is not valid UTF-8")
			}
			c.out = append(c.out, c.in[c.pos:i+1]...)
			c.pos = i + 1
			return raw, nil
		case b == '\\' || b < 0x20:
			return c.escapedStr()
		case b >= 0x80:
			ascii = false
		}
	}
	c.pos = len(c.in)
	return nil, c.errorf("a string is not terminated")
}

// escapedStr is str for a string with escapes: it resolves them, then
// writes the string with RFC 8785's escapes.
func (c *canonicalizer) escapedStr() ([]byte, error) {
	c.pos++ // "
	var s []byte
	for {
		if c.pos >= len(c.in) {
			return nil, c.errorf("a string is not terminated")
		}
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			c.out = appendString(c.out, s)
			return s, nil
		case b < 0x20:
			return nil, c.errorf("a control character in a string")
		case b == '\\':
			var err error
			if s, err = c.escape(s); err != nil {
				return nil, err
			}
		case b < 0x80:
			s = append(s, b)
			c.pos++
		default:
			r, n := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, c.errorf("a string is not valid UTF-8")
			}
			s = append(s, c.in[c.pos:c.pos+n]...)
			c.pos += n
		}
	}
}

// escape appends the character the escape at pos stands for to s. A
// surrogate must come as a high one followed by a low one.
func (c *canonicalizer) escape(s []byte) ([]byte, error) {
	if c.pos+1 >= len(c.in) {
		return nil, c.errorf("a string is not terminated")
	}
	e := c.in[c.pos+1]
	c.pos += 2
	switch e {
	case '"', '\\', '/':
		return append(s, e), nil
	case 'b':
		return append(s, '\b'), nil
	case 'f':
		return append(s, '\f'), nil
	case 'n':
		return append(s, '\n'), nil
	case 'r':
		return append(s, '\r'), nil
	case 't':
		return append(s, '\t'), nil
	case 'u':
		r, err := c.hex4()
		if err != nil {
			return nil, err
		}
		if utf16.IsSurrogate(r) {
			if r > 0xDBFF {
				return nil, c.errorf("a low surrogate without a high one")
			}
			if c.pos+1 >= len(c.in) || c.in[c.pos] != '\\' || c.in[c.pos+1] != 'u' {
				return nil, c.errorf("a high surrogate without a low one")
			}
			c.pos += 2
			lo, err := c.hex4()
			if err != nil {
				return nil, err
			}
			if lo < 0xDC00 || lo > 0xDFFF {
				return nil, c.errorf("a high surrogate without a low one")
			}
			r = utf16.DecodeRune(r, lo)
		}
		return utf8.AppendRune(s, r), nil
	default:
		return nil, c.errorf("an unknown escape")
	}
}

// hex4 reads the four hexadecimal digits of a \u escape.
func (c *canonicalizer) hex4() (rune, error) {
	if c.pos+4 > len(c.in) {
		return 0, c.errorf("a \\u escape is cut short")
	}
	var r rune
	for _, b := range c.in[c.pos : c.pos+4] {
		var d byte
		switch {
		case b >= '0' && b <= '9':
			d = b - '0'
		case b >= 'a' && b <= 'f':
			d = b - 'a' + 10
		case b >= 'A' && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, c.errorf("a \\u escape is not four hexadecimal digits")
		}
		r = r<<4 | rune(d)
	}
	c.pos += 4
	return r, nil
}

// appendString writes s as RFC 8785 writes a string: quote, backslash and
// the control characters escaped (\b \t \n \f \r, else \u00xx), everything
// else as is.
func appendString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for _, b := range s {
		switch b {
		case '"', '\\':
			out = append(out, '\\', b)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			if b < 0x20 {
				out = append(out, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
			} else {
				out = append(out, b)
			}
		}
	}
	return append(out, '"')
}

// scalar writes the literal or number at pos. Like the RFC 8785 library,
// it reads the token up to the next comma, bracket, brace or whitespace.
func (c *canonicalizer) scalar() error {
	start := c.pos
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		if b == ',' || b == ']' || b == '}' || b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			break
		}
		if b >= 0x80 {
			return c.errorf("a character outside a string that is not ASCII")
		}
		c.pos++
	}
	token := c.in[start:c.pos]
	switch string(token) {
	case "":
		return c.errorf("expected a value")
	case "true", "false", "null":
		c.out = append(c.out, token...)
		return nil
	}
	integer, ok := numberGrammar(token)
	if !ok {
		return c.errorf("not a literal or a number")
	}
	digits := len(token)
	if token[0] == '-' {
		digits--
	}
	if integer && digits <= 15 {
		// Exact as a double, and written by ECMAScript as it is (no
		// leading zeros, no exponent below 1e21), but for -0.
		if string(token) == "-0" {
			token = token[1:]
		}
		c.out = append(c.out, token...)
		return nil
	}
	f, err := strconv.ParseFloat(string(token), 64)
	if err != nil {
		return errors.New("a number is out of range")
	}
	text, err := jcs.NumberToJSON(f)
	if err != nil {
		return err
	}
	c.out = append(c.out, text...)
	return nil
}

// numberGrammar reports whether token is an RFC 8259 number, and whether it
// is an integer (no fraction, no exponent):
//
//	number = [ "-" ] int [ frac ] [ exp ]
//	int    = "0" / ( digit1-9 *DIGIT )
//	frac   = "." 1*DIGIT
//	exp    = ("e" / "E") [ "-" / "+" ] 1*DIGIT
func numberGrammar(token []byte) (integer, ok bool) {
	i := 0
	if i < len(token) && token[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(token) && token[i] >= '0' && token[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	switch {
	case i < len(token) && token[i] == '0':
		i++
	case digits() == 0:
		return false, false
	}
	integer = true
	if i < len(token) && token[i] == '.' {
		i++
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	if i < len(token) && (token[i] == 'e' || token[i] == 'E') {
		i++
		if i < len(token) && (token[i] == '+' || token[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	return integer, i == len(token)
}

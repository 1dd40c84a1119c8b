// Package strictjson reads JSON that must mean one thing to every reader:
// one well-formed UTF-8 value, no duplicate member names at any depth, no
// nesting deeper than 64, and, where asked, no U+0000. The intake refuses
// what it refuses, so a reviewer and an executor never read different
// values from the same bytes. Numbers are the key scheme's to judge
// (intentkey.CheckNumbers): what matters is that RFC 8785 keeps them.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth caps nesting so a hostile body cannot exhaust the stack.
const maxDepth = 64

// Error is why Check refused a body. Malformed is set when the body is not
// one well-formed JSON value; otherwise the value at Path (a JSON pointer,
// RFC 6901: /effect/lines/1; "" for the whole body) breaks a rule.
type Error struct {
	Malformed bool
	Path      string
	Message   string
}

func (e *Error) Error() string { return e.Message }

func invalid(path, format string, args ...any) *Error {
	return &Error{Path: path, Message: fmt.Sprintf(format, args...)}
}

// FindNUL finds the first string value or member name holding U+0000 in
// value, which is known to be well-formed. at is the value's JSON pointer
// below path, the pointer of value itself; when name is set, U+0000 is in a member
// name and at is the object that holds it.
func FindNUL(value []byte, path string) (at string, name, found bool) {
	return nulIn(json.NewDecoder(bytes.NewReader(value)), path)
}

// nulIn finds the first string value or member name holding U+0000 in the
// value dec reads next, at path.
func nulIn(dec *json.Decoder, path string) (at string, name, found bool) {
	tok, err := dec.Token()
	if err != nil {
		return "", false, false
	}
	switch tok := tok.(type) {
	case json.Delim:
		for i := 0; dec.More(); i++ {
			child := path + "/" + strconv.Itoa(i)
			if tok == '{' {
				nameTok, err := dec.Token()
				if err != nil {
					return "", false, false
				}
				member, _ := nameTok.(string)
				if strings.IndexByte(member, 0) >= 0 {
					return path, true, true
				}
				child = joinPath(path, member)
			}
			if at, name, found := nulIn(dec, child); found {
				return at, name, found
			}
		}
		_, _ = dec.Token() // the closing delimiter
	case string:
		if strings.IndexByte(tok, 0) >= 0 {
			return path, false, true
		}
	}
	return "", false, false
}

// Check reports whether body is exactly one well-formed UTF-8 JSON value
// with no duplicate member names at any depth and no nesting deeper than 64.
// Errors are *Error.
func Check(body []byte) error {
	if !utf8.Valid(body) {
		return &Error{Malformed: true, Message: "the body is not valid UTF-8"}
	}
	// Most bodies are well-formed and pass: one scan without allocating a
	// token per value says so. Anything it doubts takes the token walk,
	// which names the problem.
	if json.Valid(body) && passes(body) {
		return nil
	}
	return checkJSONTokens(body)
}

// checkJSONTokens is Check by a token walk, which names the problem.
func checkJSONTokens(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // numbers stay text: 1e400 is well-formed, not an error here
	if err := walkValue(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Error{Malformed: true, Message: "the body has data after its JSON value"}
	}
	return nil
}

// passes reports whether a body that json.Valid accepts has no duplicate
// member names and no nesting deeper than maxDepth. It allocates only for
// escaped member names and large objects.
func passes(body []byte) bool {
	w := validWalker{b: body}
	return w.value(0)
}

// validWalker walks JSON already known to be well-formed.
type validWalker struct {
	b []byte
	i int
}

func (w *validWalker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *validWalker) value(depth int) bool {
	if depth > maxDepth {
		return false
	}
	w.space()
	switch c := w.b[w.i]; c {
	case '{':
		w.i++
		w.space()
		if w.b[w.i] == '}' {
			w.i++
			return true
		}
		var small [16][]byte
		names := small[:0]
		var many map[string]struct{}
		for {
			w.space()
			name, ok := w.str(true)
			if !ok {
				return false
			}
			if many != nil {
				if _, dup := many[string(name)]; dup {
					return false
				}
				many[string(name)] = struct{}{}
			} else {
				for _, n := range names {
					if bytes.Equal(n, name) {
						return false
					}
				}
				if names = append(names, name); len(names) == len(small) {
					many = make(map[string]struct{}, 2*len(small))
					for _, n := range names {
						many[string(n)] = struct{}{}
					}
				}
			}
			w.space()
			w.i++ // the colon
			if !w.value(depth + 1) {
				return false
			}
			w.space()
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			w.i++ // the closing brace
			return true
		}
	case '[':
		w.i++
		w.space()
		if w.b[w.i] == ']' {
			w.i++
			return true
		}
		for {
			if !w.value(depth + 1) {
				return false
			}
			w.space()
			if w.b[w.i] == ',' {
				w.i++
				continue
			}
			w.i++ // the closing bracket
			return true
		}
	case '"':
		_, ok := w.str(false)
		return ok
	case 't', 'n':
		w.i += 4
		return true
	case 'f':
		w.i += 5
		return true
	default: // a number
		for w.i < len(w.b) && strings.IndexByte("+-0123456789.eE", w.b[w.i]) >= 0 {
			w.i++
		}
		return true
	}
}

// str reads a string at w.i and, with decode, returns its decoded value:
// the text itself when it has no escape, so that only an escaped member
// name allocates.
func (w *validWalker) str(decode bool) ([]byte, bool) {
	start, escaped := w.i, false
	for w.i++; w.b[w.i] != '"'; w.i++ {
		if w.b[w.i] == '\\' {
			escaped = true
			w.i++
		}
	}
	w.i++
	raw := w.b[start:w.i]
	if !decode {
		return nil, true
	}
	if !escaped {
		return raw[1 : len(raw)-1], true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false
	}
	return []byte(s), true
}

func walkValue(dec *json.Decoder, path string, depth int) error {
	if depth > maxDepth {
		return invalid(path, "the JSON nests deeper than %d levels", maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return malformed(err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '{':
			seen := make(map[string]struct{})
			for dec.More() {
				nameTok, err := dec.Token()
				if err != nil {
					return malformed(err)
				}
				name, ok := nameTok.(string)
				if !ok {
					return &Error{Malformed: true, Message: "an object member name is not a string"}
				}
				child := joinPath(path, name)
				if _, dup := seen[name]; dup {
					return invalid(child, "duplicate member name %q in %s", name, describePath(path))
				}
				seen[name] = struct{}{}
				if err := walkValue(dec, child, depth+1); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walkValue(dec, path+"/"+strconv.Itoa(i), depth+1); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return malformed(err)
		}
	}
	return nil
}

func malformed(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return &Error{Malformed: true, Message: fmt.Sprintf("the body is not valid JSON: %s at byte %d", syntax.Error(), syntax.Offset)}
	}
	return &Error{Malformed: true, Message: "the body is not valid JSON: " + err.Error()}
}

// joinPath is the JSON pointer of member name of the value at path.
func joinPath(path, name string) string {
	return path + "/" + pointerEscaper.Replace(name)
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func describePath(path string) string {
	if path == "" {
		return "the top-level object"
	}
	return path
}

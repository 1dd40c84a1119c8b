// Package misleading finds text in a write's effect that can show a
// reviewer something other than what will be written: bidirectional
// controls that reorder what follows them (Trojan Source, CVE-2021-42574),
// invisible and formatting characters that hide in a value, and
// identifiers that mix the Latin, Cyrillic and Greek scripts, whose
// look-alike letters make "pаypal" (a Cyrillic а) pass for "paypal".
// Every review surface shows what it finds beside the effect; it blocks
// nothing.
package misleading

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"
)

// Kind is what a finding is.
type Kind string

// The kinds of misleading text.
const (
	Bidi        Kind = "bidi_control"
	Invisible   Kind = "invisible"
	MixedScript Kind = "mixed_script"
)

// Finding is one value, or member name, holding misleading text.
type Finding struct {
	// Pointer is the JSON pointer of the value ("" for the document), or
	// of the member whose name it is.
	Pointer string `json:"pointer"`
	// Name is true when the member's name, not its value, holds it.
	Name bool `json:"name,omitempty"`
	Kind Kind `json:"kind"`
	// Detail names what was found: the code points, or the word and its
	// scripts.
	Detail string `json:"detail"`
}

// String says the finding in a reviewer's words.
func (f Finding) String() string {
	where := f.Pointer
	if where == "" {
		where = "/"
	}
	if f.Name {
		where = "the name of " + where
	}
	switch f.Kind {
	case Bidi:
		return where + " holds bidirectional controls (" + f.Detail + "): what is shown may be in another order than what is written"
	case Invisible:
		return where + " holds invisible characters (" + f.Detail + ")"
	default:
		return where + " mixes scripts in " + f.Detail + ": look-alike letters can pass for others"
	}
}

// maxFindings bounds what is reported of one effect: a reviewer needs to
// know that there is something, not every instance.
const maxFindings = 20

// Find returns the misleading text in the JSON document doc (an effect),
// in document order of pointers; nil when there is none or doc is not
// JSON.
func Find(doc []byte) []Finding {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	var out []Finding
	walk(v, "", &out)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	if len(out) > maxFindings {
		out = out[:maxFindings]
	}
	return out
}

func walk(v any, pointer string, out *[]Finding) {
	if len(*out) > maxFindings {
		return
	}
	switch x := v.(type) {
	case string:
		*out = append(*out, inString(x, pointer, false)...)
	case []any:
		for i, e := range x {
			walk(e, fmt.Sprintf("%s/%d", pointer, i), out)
		}
	case map[string]any:
		for k, e := range x {
			p := pointer + "/" + escape(k)
			*out = append(*out, inString(k, p, true)...)
			walk(e, p, out)
		}
	}
}

// escape is a member name as a JSON pointer token (RFC 6901).
func escape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// inString is what one string holds, each kind once.
func inString(s, pointer string, name bool) []Finding {
	var bidi, invisible []string
	for _, r := range s {
		switch {
		case isBidi(r):
			bidi = appendOnce(bidi, fmt.Sprintf("U+%04X", r))
		case isInvisible(r):
			invisible = appendOnce(invisible, fmt.Sprintf("U+%04X", r))
		}
	}
	var out []Finding
	if len(bidi) > 0 {
		out = append(out, Finding{Pointer: pointer, Name: name, Kind: Bidi, Detail: strings.Join(bidi, ", ")})
	}
	if len(invisible) > 0 {
		out = append(out, Finding{Pointer: pointer, Name: name, Kind: Invisible, Detail: strings.Join(invisible, ", ")})
	}
	for _, word := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if scripts := scriptsOf(word); len(scripts) > 1 {
			out = append(out, Finding{Pointer: pointer, Name: name, Kind: MixedScript,
				Detail: fmt.Sprintf("%q (%s)", word, strings.Join(scripts, " and "))})
			break
		}
	}
	return out
}

// isBidi reports the bidirectional formatting characters: embeddings,
// overrides, isolates and the implicit marks.
func isBidi(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// isInvisible reports a character that shows nothing: the format
// characters (zero-width spaces and joiners, the word joiner, the byte
// order mark, the soft hyphen, tags) and the Hangul fillers.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || r == 0x3164 || r == 0x115F || r == 0x1160 || r == 0xFFA0
}

// confusable are the scripts whose letters stand in for each other.
var confusable = []struct {
	name  string
	table *unicode.RangeTable
}{{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek}}

// scriptsOf names the confusable scripts a word's letters come from.
func scriptsOf(word string) []string {
	var scripts []string
	for _, r := range word {
		for _, c := range confusable {
			if unicode.Is(c.table, r) {
				scripts = appendOnce(scripts, c.name)
			}
		}
	}
	return scripts
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// Package lookup answers the support engineer's question "did this write
// happen, and how many times?" for a key prefix, a business id, or the lists
// of pending and unresolved requests. It returns structured answers; the Slack
// slash command and the local inbox each render them their own way.
package lookup

import (
	"strings"
	"unicode"

	"github.com/countersign/countersign/store"
)

// QueryKind is what a lookup text asks for.
type QueryKind string

// Query kinds.
const (
	QueryHelp      QueryKind = "help"
	QueryPending   QueryKind = "pending"
	QueryUnknown   QueryKind = "unknown"
	QueryKey       QueryKind = "key"        // a key prefix starting wa_ (or the short form)
	QueryHexPrefix QueryKind = "hex_prefix" // hex without wa_: a key prefix, else a business id
	QueryID        QueryKind = "id"         // a request id (UUID)
	QueryBusiness  QueryKind = "business"   // a string value in the effect, or a client key
)

// minPrefix is the shortest key prefix looked up (characters after wa_).
const minPrefix = 8

// maxBusinessID bounds a business id (the index holds values of up to 200 bytes).
const maxBusinessID = 200

// Query is a parsed lookup text.
type Query struct {
	Kind   QueryKind
	Value  string // the prefix, id or business id
	Suffix string // from the short form wa_d0290121a…634c
	Note   string // why a help answer was given, if not asked for
}

// Parse reads a lookup text (what follows /countersign, or the inbox's
// lookup box). It never fails: unknown input is a help query with a note.
func Parse(text string) Query {
	t := strings.TrimSpace(text)
	t = strings.Trim(t, "`'\"")
	t = strings.TrimSpace(t)
	switch strings.ToLower(t) {
	case "", "help", "-h", "--help", "?":
		return Query{Kind: QueryHelp}
	case "pending":
		return Query{Kind: QueryPending}
	case "unknown":
		return Query{Kind: QueryUnknown}
	}
	if strings.IndexFunc(t, unicode.IsSpace) >= 0 {
		return Query{Kind: QueryHelp, Note: "Look up one key or id at a time."}
	}
	if store.IsUUID(t) {
		return Query{Kind: QueryID, Value: strings.ToLower(t)}
	}
	if rest, ok := strings.CutPrefix(t, "wa_"); ok {
		prefix, suffix := rest, ""
		for _, sep := range []string{"…", "..."} {
			if p, s, found := strings.Cut(rest, sep); found {
				prefix, suffix = p, s
				break
			}
		}
		if !printableASCII(prefix) || !printableASCII(suffix) {
			return Query{Kind: QueryHelp, Note: "A key is wa_ followed by printable characters."}
		}
		if len(prefix) < minPrefix {
			return Query{Kind: QueryHelp, Note: "A key prefix needs at least 8 characters after wa_."}
		}
		return Query{Kind: QueryKey, Value: "wa_" + prefix, Suffix: suffix}
	}
	if len(t) > maxBusinessID {
		return Query{Kind: QueryHelp, Note: "That is longer than any id countersign indexes."}
	}
	if len(t) >= minPrefix && isHex(t) {
		return Query{Kind: QueryHexPrefix, Value: t}
	}
	return Query{Kind: QueryBusiness, Value: t}
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

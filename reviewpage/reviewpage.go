// Package reviewpage is what the review pages (the local inbox and the
// console) render alike: the template functions that show a request's key,
// its effect, the text in it that can mislead, its times and its audit
// events, so that a request reads the same on either.
package reviewpage

import (
	"bytes"
	"encoding/json"
	"html/template"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/lookup"
)

// Funcs are the template functions every review page has; prefix is where
// the pages are mounted. A page set adds its own to them.
func Funcs(prefix string) template.FuncMap {
	return template.FuncMap{
		"prefix":   func() string { return prefix },
		"shortKey": approvals.ShortKey,
		"pretty":   PrettyJSON,
		// What in an effect can show a reviewer something other than what
		// is written (bidi controls, invisible characters, mixed-script
		// words).
		"misleading": func(doc []byte) []misleading.Finding { return misleading.Find(doc) },
		"when":       When,
		"inc":        func(i int) int { return i + 1 },
		"fields":     lookup.EventFields,
	}
}

// When is a time as the pages show it, in UTC to the second.
func When(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// PrettyJSON indents a JSON document; what is not JSON is shown as it is.
func PrettyJSON(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

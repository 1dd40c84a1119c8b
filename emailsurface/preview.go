package emailsurface

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/surface"
)

// maxChangeLines bounds the changes a message lists.
const maxChangeLines = 100

// writeChange writes what the write changes, from its preview: field by
// field before -> after, or the provider's summary, with the text that can
// mislead a reviewer flagged; "preview unavailable" when the tool asks a
// preview that failed or did not come in time. Nothing when it asks none.
func writeChange(b *strings.Builder, v surface.View) {
	c := v.Change()
	switch {
	case !c.Wanted:
		return
	case c.Unavailable:
		b.WriteString("What changes: preview unavailable.\n\n")
		return
	case c.Summary != "":
		fmt.Fprintf(b, "What changes:\n%s\n\n", oneLine(c.Summary))
	case len(c.Lines) == 0:
		b.WriteString("What changes: the preview says nothing changes.\n\n")
	default:
		b.WriteString("What changes:\n")
		for i, l := range c.Lines {
			if i == maxChangeLines {
				fmt.Fprintf(b, "  … and %d more\n", len(c.Lines)-i)
				break
			}
			fmt.Fprintf(b, "  %s: %s -> %s\n", oneLine(l.Field), oneLine(cutText(l.Before)), oneLine(cutText(l.After)))
		}
		b.WriteString("\n")
	}
	if len(c.Findings) > 0 {
		b.WriteString("Check the preview's text:\n")
		for _, f := range c.Findings {
			fmt.Fprintf(b, "  - %s\n", oneLine(f.String()))
		}
		b.WriteString("\n")
	}
}

// cutText shortens a value shown in a message.
func cutText(s string) string {
	if r := []rune(s); len(r) > 500 {
		return string(r[:500]) + "…"
	}
	return s
}

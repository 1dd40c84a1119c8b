package teamssurface

import (
	"fmt"
	"strings"

	"github.com/countersign/countersign/surface"
)

// maxChangeFacts bounds the changes a card lists.
const maxChangeFacts = 30

// changeBody is what the write changes, from its preview: a fact per
// field, before → after, or the provider's summary, with the text that can
// mislead a reviewer flagged; "preview unavailable" when the tool asks a
// preview that failed or did not come in time. Nothing when it asks none.
func changeBody(v surface.View) []any {
	c := v.Change()
	switch {
	case !c.Wanted:
		return nil
	case c.Unavailable:
		return []any{text("What changes: preview unavailable", object{"isSubtle": true})}
	}
	out := []any{text("What changes", object{"weight": "Bolder"})}
	switch {
	case c.Summary != "":
		out = append(out, text(plain(c.Summary), nil))
	case len(c.Lines) == 0:
		out = append(out, text("The preview says nothing changes.", nil))
	default:
		facts := make([]any, 0, len(c.Lines))
		for i, l := range c.Lines {
			if i == maxChangeFacts {
				facts = append(facts, object{"title": "…", "value": fmt.Sprintf("and %d more", len(c.Lines)-i)})
				break
			}
			facts = append(facts, object{"title": plain(l.Field), "value": plain(l.Before) + " → " + plain(l.After)})
		}
		out = append(out, object{"type": "FactSet", "facts": facts})
	}
	if len(c.Findings) > 0 {
		lines := make([]string, len(c.Findings))
		for i, f := range c.Findings {
			lines[i] = "- " + plain(f.String())
		}
		out = append(out, text("Check the preview's text:\n"+strings.Join(lines, "\n"), object{"color": "Warning"}))
	}
	return out
}

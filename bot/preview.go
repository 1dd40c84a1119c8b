package bot

import (
	"strings"

	"github.com/slack-go/slack"
)

// maxChangeLines bounds the changes a card lists; the console lists them all.
const maxChangeLines = 30

// changeBlocks shows what the write changes, from its preview: field by
// field before → after, or the provider's summary, with the text that can
// mislead a reviewer flagged as an effect's is; "preview unavailable" when
// the tool asks a preview that failed or did not come in time. None when
// the tool asks none.
func changeBlocks(v cardView) []slack.Block {
	c := v.Change()
	if !c.Wanted {
		return nil
	}
	if c.Unavailable {
		return []slack.Block{slack.NewContextBlock("", mrkdwn(":grey_question: *What changes:* preview unavailable"))}
	}
	var text string
	switch {
	case c.Summary != "":
		text = "*What changes*\n" + escape(c.Summary)
	case len(c.Lines) == 0:
		text = "*What changes*\nThe preview says nothing changes."
	default:
		lines := make([]string, 0, len(c.Lines))
		for i, l := range c.Lines {
			if i == maxChangeLines {
				lines = append(lines, escape("… and "+plural(len(c.Lines)-i, "more change")))
				break
			}
			lines = append(lines, "• `"+escape(l.Field)+"`: "+escape(cut(l.Before, 200))+" → *"+escape(cut(l.After, 200))+"*")
		}
		text = "*What changes*\n" + strings.Join(lines, "\n")
	}
	blocks := []slack.Block{slack.NewSectionBlock(mrkdwn(cut(text, maxSectionText)), nil, nil)}
	if len(c.Findings) > 0 {
		lines := make([]string, len(c.Findings))
		for i, f := range c.Findings {
			lines[i] = "• " + escape(f.String())
		}
		blocks = append(blocks, slack.NewSectionBlock(mrkdwn(cut(":warning: *Check the preview's text*\n"+strings.Join(lines, "\n"), maxSectionText)), nil, nil))
	}
	return blocks
}

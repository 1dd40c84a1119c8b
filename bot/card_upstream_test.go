package bot

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// The card of an upstream's tool through the MCP gateway says which MCP
// server's tool it is and what that server declared of it, escaped, above
// the arguments; a configured tool's card has no such block.
func TestCardOfAnUpstreamToolNamesItsServer(t *testing.T) {
	t.Parallel()
	req := store.Request{Key: "wa_0123456789abcdef", Tool: "fs__write_file", RunID: "r", Step: json.RawMessage(`"call"`),
		Snapshot: json.RawMessage(`{"path":"/srv/a","content":"hi"}`), RequestedBy: "ops-agent"}
	render := func(tool approvals.Tool) string {
		_, blocks := renderCard(cardView{Request: req, Round: 1, State: "pending", Tool: tool})
		b, err := json.Marshal(blocks)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gated := render(approvals.Tool{Name: "fs__write_file", Upstream: "fs",
		Description: "write_file on the MCP server fs (it says: not read-only, destructive). Writes <a> file."})
	if !strings.Contains(gated, `*MCP tool*\nwrite_file on the MCP server fs (it says: not read-only, destructive). Writes \u0026lt;a\u0026gt; file.`) {
		t.Errorf("the upstream tool's card:\n%s", gated)
	}
	if strings.Index(gated, "*MCP tool*") > strings.Index(gated, "/srv/a") {
		t.Error("the MCP tool block comes after the arguments")
	}
	if plain := render(approvals.Tool{Name: "fs__write_file", Description: "Writes a file."}); strings.Contains(plain, "MCP tool") {
		t.Errorf("a configured tool's card names an MCP tool:\n%s", plain)
	}
}

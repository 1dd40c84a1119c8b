package console

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals/approvalstest"
)

// A request's page flags text in its effect that can show the reviewer
// something other than what is written.
func TestRequestPageFlagsMisleadingText(t *testing.T) {
	b := setup(t)
	effect := `{"invoice":"inv_8841","amount_cents":4200,"currency":"USD","note":"p\u0430y \u200Bnow"}`
	in := approvalstest.Intent(&approvalstest.IntentOpts{Effect: &effect})
	in.RunID = fmt.Sprintf("r-misleading-%d", time.Now().UnixNano())
	in.Tool, in.RequestedFor = toolName, requester
	req := approvalstest.Submit(t, b.svc, "billing-agent", in)
	br := b.browser(t)
	br.login("alice@example.com")
	resp, page := br.get(Prefix + "/requests/" + req.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the request page answered %d", resp.StatusCode)
	}
	for _, want := range []string{`class="misleading"`, "/note holds invisible characters (U&#43;200B)", "/note mixes scripts in &#34;pаy&#34; (Latin and Cyrillic)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the request page lacks %q", want)
		}
	}
}

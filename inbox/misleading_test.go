package inbox

import (
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store/drivertest"
)

// The inbox flags text in an effect that can show a reviewer something
// other than what is written, on its list and on the request's page.
func TestPagesFlagMisleadingText(t *testing.T) {
	t.Parallel()
	b := setupWith(t, &drivertest.Postgres)
	req := b.submit(t, &approvalstest.IntentOpts{Effect: new(`{"invoice":"inv_8841","note":"p\u0430y \u202Eeno\u202C"}`)})
	for _, path := range []string{DefaultPrefix + "/", DefaultPrefix + "/requests/" + req.ID} {
		status, page := get(t, b.server, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		for _, want := range []string{`class="misleading"`, "/note holds bidirectional controls (U&#43;202E, U&#43;202C)", "/note mixes scripts in &#34;pаy&#34; (Latin and Cyrillic)"} {
			if !strings.Contains(page, want) {
				t.Errorf("GET %s lacks %q", path, want)
			}
		}
	}
	plain := b.submit(t, &approvalstest.IntentOpts{Step: new(`7`)})
	if _, page := get(t, b.server, DefaultPrefix+"/requests/"+plain.ID); strings.Contains(page, `class="misleading"`) {
		t.Error("a plain effect is flagged")
	}
}

package inbox

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// With its database out of reach the inbox says so, 503 with Retry-After,
// on every page and on a decision.
func TestDatabaseOutageAsksToTryAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := b.submit(t, nil)

	// The same database, behind a port nothing listens on.
	down, err := postgres.Open(context.Background(), storetest.UnreachableURL(t, storetest.AdminURL()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(down.Close)
	svc, err := approvals.New(approvals.Config{DB: store.NewLedger(down, store.Options{}), Tools: b.svc.Tools, Owners: b.svc.Owners})
	if err != nil {
		t.Fatal(err)
	}
	srv := b.serve(t, Options{Reviewer: reviewer, Service: svc, Store: store.NewLedger(down, store.Options{})})

	check := func(what string, resp *http.Response) {
		t.Helper()
		status, body := readAll(t, resp)
		if status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, "cannot reach its database") {
			t.Errorf("%s = %d Retry-After %q, want 503 Retry-After 2 saying so:\n%s", what, status, resp.Header.Get("Retry-After"), body)
		}
	}
	for _, path := range []string{"/", "/requests/" + req.ID, "/lookup?q=inv_8841"} {
		resp, err := srv.client.Get(srv.URL + DefaultPrefix + path)
		if err != nil {
			t.Fatal(err)
		}
		check("GET "+path, resp)
	}
	check("decision", post(t, srv, DefaultPrefix+"/decide", decisionForm(req, store.VerdictApprove), nil))
	if n := b.count(t, `SELECT count(*) FROM decisions`); n != 0 {
		t.Errorf("%d decisions recorded while the database was out of reach", n)
	}
}

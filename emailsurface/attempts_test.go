package emailsurface_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/emailsurface"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// Wrong addresses typed for a message's links count on every replica:
// three on one replica's approve link and two on another's reject link
// spend the message's links on both, so the right address decides
// nothing; another approver's message is counted apart and decides.
func TestWrongAddressesAreCountedAcrossReplicas(t *testing.T) {
	t.Parallel()
	db := store.NewLedger(storetest.NewDB(t), store.Options{})
	review := approvalstest.New(t, approvals.Config{DB: db, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{"email:" + ana, "email:" + ben}, MaxAttempts: 5},
	}})
	replica := func() (*emailsurface.Email, string) {
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		e, err := emailsurface.New(emailsurface.Config{
			SMTP: emailsurface.SMTP{Addr: "127.0.0.1:9"}, From: "countersign@example.com", LinkBase: srv.URL,
			Secrets: [][]byte{[]byte("dispatch-secret")}, Review: review, Cards: db, Attempts: db,
		})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle(emailsurface.LinkPath, e.Handler())
		return e, srv.URL
	}
	a, baseA := replica()
	_, baseB := replica()
	req := approvalstest.Submit(t, review, "billing-agent", approvalstest.Intent(nil))
	exp := time.Now().Add(time.Hour)
	on := func(base, link string) string { return base + link[strings.Index(link, emailsurface.LinkPath):] }
	benApprove := emailsurface.LinkFor(a, req.ID, 1, req.PayloadHash, store.VerdictApprove, ben, exp)
	benReject := emailsurface.LinkFor(a, req.ID, 1, req.PayloadHash, store.VerdictReject, ben, exp)
	anaApprove := emailsurface.LinkFor(a, req.ID, 1, req.PayloadHash, store.VerdictApprove, ana, exp)

	for i, base := range []string{baseA, baseA, baseA, baseB, baseB} {
		link := on(base, benApprove)
		if i >= 3 {
			link = on(base, benReject)
		}
		if status, _ := post(t, link, "mallory@example.com"); status != http.StatusForbidden {
			t.Fatalf("wrong address %d: %d, want 403", i, status)
		}
	}
	for _, link := range []string{on(baseA, benApprove), on(baseB, benApprove), on(baseB, benReject)} {
		if status, body := post(t, link, ben); status != http.StatusTooManyRequests || !strings.Contains(body, "too many times") {
			t.Fatalf("the right address after five wrong ones on two replicas: %d\n%s", status, body)
		}
	}
	if _, err := db.DecisionFor(t.Context(), req.ID, 1); err == nil {
		t.Fatal("a spent link decided the request")
	}
	if status, body := post(t, on(baseB, anaApprove), ana); status != http.StatusOK || !strings.Contains(body, "You approved") {
		t.Fatalf("another approver's link: %d\n%s", status, body)
	}
	if d, err := db.DecisionFor(t.Context(), req.ID, 1); err != nil || d.DecidedBy != "email:"+ana {
		t.Fatalf("decision = %+v, %v; want ana's", d, err)
	}
}

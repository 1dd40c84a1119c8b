package approvals

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// A Service built without a logger logs nowhere instead of panicking on its
// first request.
func TestNewDefaultsANilLogger(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	svc, err := New(Config{DB: store.NewLedger(db, store.Options{}), Tools: map[string]Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Logger == nil {
		t.Fatal("New left the logger nil")
	}
	req, created, err := svc.Submit(context.Background(), "billing-agent", Intent{
		RunID: "r-new", Step: json.RawMessage("1"), Tool: "billing.credit", Effect: json.RawMessage(`{"invoice":"inv_1"}`),
	})
	if err != nil || !created || req.Key == "" {
		t.Fatalf("Submit = %+v, %v, %v", req, created, err)
	}
}

// Every missing required field is reported at once.
func TestNewReportsEveryMissingField(t *testing.T) {
	t.Parallel()
	_, err := New(Config{})
	if err == nil {
		t.Fatal("New accepted an empty Config")
	}
	for _, want := range []string{"DB is required", "Tools is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	_, err = New(Config{DB: store.NewLedger(storetest.NewDB(t), store.Options{}), Tools: map[string]Tool{"a": {Name: "b"}}})
	if err == nil || !strings.Contains(err.Error(), `tool "a" is named "b"`) {
		t.Errorf("a misnamed tool: %v", err)
	}
}

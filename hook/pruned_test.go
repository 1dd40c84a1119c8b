package hook

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// prune cancels the request key names and prunes every request settled
// until now, as the retention sweep would once the window passed.
func (b *bundle) prune(t *testing.T, key string) {
	t.Helper()
	if r := b.do(t, http.MethodPost, "/v1/requests/"+key+"/cancel", testToken, nil, nil); r.status != http.StatusOK {
		t.Fatalf("cancel = %d %s", r.status, r.body)
	}
	if n, err := b.store.Prune(context.Background(), store.PruneParams{Before: time.Now().Add(time.Minute)}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
}

// A replay of a pruned key is 410 pruned with the status it ended in;
// another write under the key is 409 key_reused; neither stores anything.
func TestPrunedKeyIsGoneForGood(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		const key = "client-key-pruned"
		withKey := map[string]string{"Idempotency-Key": key}
		if r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), withKey); r.status != http.StatusCreated {
			t.Fatalf("intake = %d %s", r.status, r.body)
		}
		b.prune(t, key)

		again := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), withKey)
		if code, _ := again.errorCode(t); again.status != http.StatusGone || code != "pruned" ||
			!strings.Contains(string(again.body), `"status":"cancelled"`) {
			t.Errorf("replay of a pruned key = %d %s", again.status, again.body)
		}
		other := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(strings.Replace(vectorBody, "4200", "4300", 1)), withKey)
		if code, _ := other.errorCode(t); other.status != http.StatusConflict || code != "key_reused" {
			t.Errorf("another write under a pruned key = %d %s", other.status, other.body)
		}
		if n, err := b.queryInt(`SELECT count(*) FROM requests`); err != nil || n != 0 {
			t.Errorf("%d requests stored after the prune, %v", n, err)
		}
		if got := b.do(t, http.MethodGet, "/v1/requests/"+key, testToken, nil, nil); got.status != http.StatusNotFound {
			t.Errorf("GET of a pruned key = %d %s", got.status, got.body)
		}
	})
}

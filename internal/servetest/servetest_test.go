package servetest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// Start returns a serve that answers, its log is there to wait on, and
// Stop ends it gracefully: exit code 0, by itself.
func TestStartServesAndStops(t *testing.T) {
	p := servetest.Start(t, "COUNTERSIGN_DATA_DIR="+t.TempDir(), "COUNTERSIGN_CONFIG=", "COUNTERSIGN_DATABASE_URL=")
	resp, err := http.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz answered %d", resp.StatusCode)
	}
	if !p.WaitLogCount(`"msg":"listening"`, 1, time.Second) || p.WaitLogCount(`"msg":"listening"`, 2, 100*time.Millisecond) {
		t.Fatalf("serve logged listening other than once:\n%s", p.Logs())
	}
	if code, exited := p.Stop(20 * time.Second); code != 0 || !exited {
		t.Fatalf("Stop = %d, %t; want 0 and an exit by itself:\n%s", code, exited, p.Logs())
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited is open after Stop")
	}
	if p.WaitLog("no such line", time.Minute) {
		t.Fatal("WaitLog found a line nobody wrote")
	}
}

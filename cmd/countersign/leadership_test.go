package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

const expiryRuns = `countersign_sweep_runs_total{sweep="expiry"}`

// TestSweepsRunOnceAcrossTheFleet runs two serve processes on one database
// with the expiry sweep due every second: one leads and sweeps, the other
// sweeps nothing while the leader sweeps three times and it dispatches; after the leader is killed with SIGKILL the other leads
// within 5 s and sweeps. Dispatch runs on both throughout.
func TestSweepsRunOnceAcrossTheFleet(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: ["local:reviewer"]
    dispatch: {url: "http://127.0.0.1:9/credits"}
executor: {expiry_schedule: "@every 1s", reconcile_schedule: "@every 1s", dispatch_schedule: "@every 1s"}
`, hex.EncodeToString(sum[:])))
	env := map[string]string{
		"COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_DISPATCH_SECRET": smokeSecret, "COUNTERSIGN_LISTEN": "127.0.0.1:0",
		"COUNTERSIGN_DATA_DIR": t.TempDir(), "COUNTERSIGN_DATABASE_URL": storetest.NewURL(t), "COUNTERSIGN_INBOX": "off",
	}
	fleet := []*serveProcess{startServeProcess(t, env), startServeProcess(t, env)}
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range fleet {
				t.Logf("replica %d's output:\n%s", i, p.logs.String())
			}
		}
	})

	leader := waitForLeader(t, fleet, 5*time.Second)
	follower := fleet[1-leader]
	before := []map[string]float64{fleet[0].metrics(t), fleet[1].metrics(t)}
	watched := time.Now()
	eventually(t, "the leader sweeps expiry three times and the follower dispatches twice", func() bool {
		return fleet[leader].metrics(t)[expiryRuns] >= before[leader][expiryRuns]+3 &&
			follower.metrics(t)[`countersign_sweep_runs_total{sweep="dispatch"}`] >= before[1-leader][`countersign_sweep_runs_total{sweep="dispatch"}`]+2
	})
	after := []map[string]float64{fleet[0].metrics(t), fleet[1].metrics(t)}
	window := time.Since(watched)
	if led, most := after[leader][expiryRuns]-before[leader][expiryRuns], window.Seconds()+2; led > most {
		t.Errorf("the leader ran expiry %v times in %v, want at most one a second", led, window.Round(time.Millisecond))
	}
	if n := after[1-leader][expiryRuns]; n != 0 {
		t.Errorf("the follower ran expiry %v times, want 0", n)
	}
	if n := after[1-leader][`countersign_sweep_runs_total{sweep="reconcile"}`]; n != 0 {
		t.Errorf("the follower ran reconcile %v times, want 0", n)
	}
	if !strings.Contains(fleet[leader].logs.String(), "leading the sweeps") {
		t.Error("the leader never logged that it leads")
	}

	fleet[leader].kill(t)
	killed := time.Now()
	eventually(t, "the follower leads after the leader's SIGKILL", func() bool {
		return follower.metrics(t)["countersign_sweep_leader"] == 1
	})
	if took := time.Since(killed); took > 5*time.Second {
		t.Errorf("the follower took %v to lead, want under 5 s", took)
	}
	t.Logf("leadership handed on %v after the SIGKILL", time.Since(killed).Round(time.Millisecond))
	start := follower.metrics(t)[expiryRuns]
	eventually(t, "the new leader sweeps", func() bool {
		return follower.metrics(t)[expiryRuns] >= start+2
	})
}

// waitForLeader waits for exactly one of the fleet to report leading and
// returns its index; two at once fails.
func waitForLeader(t *testing.T, fleet []*serveProcess, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var leading []int
		for i, p := range fleet {
			if p.metrics(t)["countersign_sweep_leader"] == 1 {
				leading = append(leading, i)
			}
		}
		switch {
		case len(leading) > 1:
			t.Fatalf("replicas %v all lead", leading)
		case len(leading) == 1:
			return leading[0]
		case time.Now().After(deadline):
			t.Fatalf("no replica leads within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

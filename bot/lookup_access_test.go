package bot_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

const (
	supportChan  = "C0SUPPORT"
	supportGroup = "S0SUPPORT"
)

// lockedBuffer collects log lines written from many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// revealsNothing fails if a refusal mentions anything about req.
func revealsNothing(t *testing.T, what, got string, req store.Request) {
	t.Helper()
	for _, secret := range []string{req.Key[3:11], req.ID, "inv_8841", req.Summary, "Status", "pending*", "billing.credit"} {
		if strings.Contains(got, secret) {
			t.Errorf("%s: the refusal reveals %q:\n%s", what, secret, got)
		}
	}
}

// With slack.lookup_allowed set, a listed user, a member of a listed user
// group and anyone in a listed channel look requests up; everyone else gets
// the refusal and nothing about the request, and the refusal is logged.
// Help still answers.
func TestSlashCommandLookupAllowList(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		logs := &lockedBuffer{}
		b := setup(t, &options{driver: drv,
			lookupAllowed: []string{"USUP", supportGroup, supportChan},
			logger:        slog.New(slog.NewJSONHandler(logs, nil)),
		})
		b.fake.SetGroup(supportGroup, "UGROUPIE", "UOTHERMEMBER")
		req := b.submit(intent{invoice: "inv_8841"})

		for _, c := range []struct{ name, user, channel string }{
			{"listed user", "USUP", billingChan},
			{"member of a listed group", "UGROUPIE", billingChan},
			{"anyone in a listed channel", "UOUTSIDER", supportChan},
		} {
			if got := b.commandIn(c.user, c.channel, req.Key[:11]); !strings.Contains(got, req.Key) || !strings.Contains(got, "Status *pending*") {
				t.Errorf("%s: /countersign %s:\n%s", c.name, req.Key[:11], got)
			}
			if got := b.commandIn(c.user, c.channel, "pending"); !strings.Contains(got, req.Key) {
				t.Errorf("%s: /countersign pending:\n%s", c.name, got)
			}
		}

		eventsBefore, callsBefore := b.count(`SELECT count(*) FROM events`), len(b.fake.Calls(""))
		for _, text := range []string{req.Key, req.Key[:11], req.Key[3:14], req.ID, "inv_8841", "pending", "unknown"} {
			got := b.commandIn("UOUTSIDER", billingChan, text)
			if !strings.Contains(got, "You are not allowed to look up requests") || !strings.Contains(got, "slack.lookup_allowed") {
				t.Errorf("/countersign %s by an outsider:\n%s", text, got)
			}
			revealsNothing(t, "/countersign "+text, got, req)
		}
		if got := b.count(`SELECT count(*) FROM events`); got != eventsBefore {
			t.Errorf("refused lookups wrote %d events", got-eventsBefore)
		}
		// Nothing went to Slack: the group was resolved once, for UGROUPIE,
		// through the cache approvers use.
		if calls := b.fake.Calls(""); len(calls) != callsBefore {
			t.Errorf("refused lookups made %d Slack calls", len(calls)-callsBefore)
		}
		if n := b.fake.Count("usergroups.users.list"); n != 1 {
			t.Errorf("usergroups.users.list called %d times, want 1 (cached)", n)
		}
		for _, text := range []string{"help", ""} {
			if got := b.commandIn("UOUTSIDER", billingChan, text); !strings.Contains(got, "/countersign pending") {
				t.Errorf("/countersign %q by an outsider did not answer help:\n%s", text, got)
			}
		}

		refusals := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if !strings.Contains(line, "slash command lookup refused") {
				continue
			}
			refusals++
			if !strings.Contains(line, `"user":"UOUTSIDER"`) || !strings.Contains(line, `"channel":"`+billingChan+`"`) {
				t.Errorf("refusal log lacks the user or channel: %s", line)
			}
			if strings.Contains(line, req.Key[3:11]) || strings.Contains(line, "inv_8841") {
				t.Errorf("refusal log carries what was asked for: %s", line)
			}
		}
		if refusals != 7 {
			t.Errorf("%d refusals logged, want 7:\n%s", refusals, logs.String())
		}
	})
}

// A user group that cannot be resolved refuses nothing silently and allows
// nothing: the user is asked to try again.
func TestSlashCommandLookupGroupUnresolved(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, lookupAllowed: []string{"USUP", supportGroup}})
		req := b.submit(intent{})
		b.fake.FailNext("usergroups.users.list", bottest.Failure{Status: 503})
		got := b.commandIn("UGROUPIE", billingChan, req.Key)
		if !strings.Contains(got, "try again") {
			t.Errorf("answer while the group cannot be resolved:\n%s", got)
		}
		revealsNothing(t, "unresolved group", got, req)
		// A listed user needs no group resolution.
		if got := b.commandIn("USUP", billingChan, req.Key); !strings.Contains(got, req.Key) {
			t.Errorf("listed user:\n%s", got)
		}
	})
}

// Without slack.lookup_allowed, anyone in the workspace looks requests up.
func TestSlashCommandLookupUnsetAllowsEveryone(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{})
		if got := b.commandIn("UANYONE", "C0RANDOM", req.Key); !strings.Contains(got, req.Key) || !strings.Contains(got, "Status *pending*") {
			t.Errorf("/countersign %s without an allow list:\n%s", req.Key, got)
		}
		if n := b.fake.Count("usergroups.users.list"); n != 0 {
			t.Errorf("usergroups.users.list called %d times without an allow list", n)
		}
	})
}

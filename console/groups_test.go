package console

import (
	"net/http"
	"strings"
	"testing"
)

// The hand-kept group members follow a configuration reload: a reviewer
// added to console.groups sees and may decide what the group approves
// from the next page on, in the same session, and one removed no longer
// sees it.
func TestHandKeptGroupsFollowAReload(t *testing.T) {
	b := setup(t)
	req := b.submit(t, toolName, "Credit to inv_reloaded")
	br := b.browser(t)
	br.login("bob@example.com") // the ID token lists no group

	if _, queue := br.get(Prefix + "/"); strings.Contains(queue, req.ID) {
		t.Fatalf("before the reload bob's queue lists billing's request:\n%s", queue)
	}
	b.groups.SetMembers(map[string][]string{"finance": {bob}})
	if _, queue := br.get(Prefix + "/"); !strings.Contains(queue, `id="row-`+req.ID+`"`) {
		t.Fatalf("after bob joined finance by a reload his queue lacks the request:\n%s", queue)
	}
	if resp, page := br.get(Prefix + "/requests/" + req.ID); resp.StatusCode != http.StatusOK || !strings.Contains(page, "inv_8841") {
		t.Fatalf("after the reload bob's request page answered %d:\n%s", resp.StatusCode, page)
	}
	b.groups.SetMembers(map[string][]string{"finance": {alice}})
	if resp, page := br.get(Prefix + "/requests/" + req.ID); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "inv_8841") {
		t.Fatalf("after bob left finance by a reload his request page answered %d:\n%s", resp.StatusCode, page)
	}
	if _, queue := br.get(Prefix + "/"); strings.Contains(queue, req.ID) {
		t.Fatalf("after bob left finance his queue still lists the request:\n%s", queue)
	}
}

package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/countersign/countersign/client"
)

// Every call says which client made it: countersign-go/<version>.
func TestUserAgentNamesTheClientAndItsVersion(t *testing.T) {
	t.Parallel()
	agents := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.Header.Get("User-Agent")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"tools": []}`))
	}))
	defer srv.Close()
	// Through a caller's own http.Client too.
	c := client.New(srv.URL, agentToken, client.WithHTTPClient(&http.Client{}))
	if _, err := c.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Built inside its own module, the client has no recorded version
	// unless Go stamped one from the checkout.
	if got := <-agents; got != "countersign-go/"+client.Version() || !regexp.MustCompile(`^(devel|v\d+\.\d+\.\d+\S*)$`).MatchString(client.Version()) {
		t.Errorf("User-Agent = %q, Version() = %q; want countersign-go/<version>", got, client.Version())
	}
}

// An agent's program records the client's module among its dependencies,
// at the version it requires.
func TestVersionIsTheModuleVersionTheProgramWasBuiltWith(t *testing.T) {
	t.Parallel()
	const module = "github.com/countersign/countersign"
	for name, c := range map[string]struct {
		info *debug.BuildInfo
		want string
	}{
		"an agent requiring a release": {&debug.BuildInfo{Main: debug.Module{Path: "example.com/agent", Version: "v0.2.0"},
			Deps: []*debug.Module{{Path: "golang.org/x/text", Version: "v0.14.0"}, {Path: module, Version: "v1.4.0"}}}, "v1.4.0"},
		"an agent requiring a commit": {&debug.BuildInfo{Main: debug.Module{Path: "example.com/agent"},
			Deps: []*debug.Module{{Path: module, Version: "v0.0.0-20250301120000-0123456789ab"}}}, "v0.0.0-20250301120000-0123456789ab"},
		"countersign installed at a release":  {&debug.BuildInfo{Main: debug.Module{Path: module, Version: "v1.4.0"}}, "v1.4.0"},
		"countersign built from its checkout": {&debug.BuildInfo{Main: debug.Module{Path: module, Version: "(devel)"}}, "devel"},
		"no build information":                {nil, "devel"},
	} {
		if got := client.VersionIn(c.info); got != c.want {
			t.Errorf("%s: version %q, want %q", name, got, c.want)
		}
	}
}

package hook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/wire"
)

// fixedGateway exposes fs's read_text_file (a read) and write_file (gated),
// and down's read, whose upstream is not connected; reads counts the calls
// that passed through.
type fixedGateway struct{ reads atomic.Int64 }

func (g *fixedGateway) Tools() []wire.GatewayTool {
	readOnly := true
	return []wire.GatewayTool{
		{Name: "down__read", Upstream: "down", Tool: "read", InputSchema: json.RawMessage(`{"type":"object"}`), Read: true},
		{Name: "fs__read_text_file", Upstream: "fs", Tool: "read_text_file", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: wire.GatewayAnnotations{ReadOnly: &readOnly}, Read: true, Up: true},
		{Name: "fs__write_file", Upstream: "fs", Tool: "write_file", InputSchema: json.RawMessage(`{"type":"object"}`), Up: true},
	}
}

func (g *fixedGateway) Call(_ context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	switch tool {
	case "fs__read_text_file":
		g.reads.Add(1)
		text, _ := json.Marshal("read " + string(args))
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}],"isError":false}`), nil
	case "fs__write_file":
		return nil, ErrNotARead
	case "down__read":
		return nil, &UpstreamDownError{Upstream: "down"}
	}
	return nil, ErrUnknownGatewayTool
}

// The gateway's routes list the upstreams' tools and pass a read through
// with its arguments; a gated tool, an unknown one and one whose upstream
// is down are refused with what to do, and no gateway lists nothing.
func TestGatewayRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if got := b.do(t, http.MethodGet, "/v1/gateway/tools", testToken, nil, nil); got.status != http.StatusOK || !strings.Contains(string(got.body), `"tools":[]`) {
		t.Errorf("no gateway: tools = %d %s", got.status, got.body)
	}
	if got := b.do(t, http.MethodPost, "/v1/gateway/call", testToken, strings.NewReader(`{"tool":"fs__read_text_file"}`), nil); got.status != http.StatusUnprocessableEntity {
		t.Errorf("no gateway: call = %d %s", got.status, got.body)
	}
	g := &fixedGateway{}
	b.handler.SetGateway(g)
	var list wire.GatewayToolList
	got := b.do(t, http.MethodGet, "/v1/gateway/tools", testToken, nil, nil)
	if got.status != http.StatusOK || json.Unmarshal(got.body, &list) != nil || len(list.Tools) != 3 || !list.Tools[1].Read || list.Tools[2].Read {
		t.Errorf("tools = %d %s", got.status, got.body)
	}
	got = b.do(t, http.MethodPost, "/v1/gateway/call", testToken, strings.NewReader(`{"tool":"fs__read_text_file","arguments":{"path":"/srv/a"}}`), nil)
	var result wire.GatewayResult
	if got.status != http.StatusOK || json.Unmarshal(got.body, &result) != nil || !strings.Contains(string(result.Result), `read {\"path\":\"/srv/a\"}`) || g.reads.Load() != 1 {
		t.Errorf("a read = %d %s (%d passed through)", got.status, got.body, g.reads.Load())
	}
	for _, c := range []struct {
		body, code, says string
		status           int
	}{
		{`{"tool":"fs__write_file","arguments":{"path":"/a","content":"x"}}`, "invalid_request", "request it with POST /v1/requests", http.StatusUnprocessableEntity},
		{`{"tool":"fs__nothing"}`, "unknown_tool", "GET /v1/gateway/tools lists them", http.StatusUnprocessableEntity},
		{`{"tool":"down__read"}`, "unavailable", "The upstream down is not connected", http.StatusServiceUnavailable},
		{`{"tool":"fs__read_text_file","arguments":[1]}`, "invalid_request", "arguments must be a JSON object", http.StatusUnprocessableEntity},
	} {
		got := b.do(t, http.MethodPost, "/v1/gateway/call", testToken, strings.NewReader(c.body), nil)
		if got.status != c.status || !strings.Contains(string(got.body), `"code":"`+c.code+`"`) || !strings.Contains(string(got.body), c.says) {
			t.Errorf("%s = %d %s; want %d %s saying %q", c.body, got.status, got.body, c.status, c.code, c.says)
		}
	}
	if g.reads.Load() != 1 {
		t.Errorf("%d reads passed through, want the one", g.reads.Load())
	}
}

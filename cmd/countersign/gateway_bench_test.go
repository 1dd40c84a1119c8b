package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// A read through the gateway beside the same read on the upstream called
// directly, interleaved in one run: the memory server's read_graph, by the
// Go MCP SDK's client, once over serve's /mcp (the MCP server, the agent
// API, the pass-through, the upstream over stdio) and once over stdio to a
// memory server of its own. It reports each path's p50 and p99 and what
// the gateway adds to the p99 (target: at most 5 ms).
//
//	go test ./cmd/countersign -run '^$' -bench 'GatewayRead$' -benchtime 2000x
func BenchmarkGatewayRead(b *testing.B) {
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatalf("the gateway's upstreams need Node.js: %v", err)
	}
	memory := upstreamServer(b, "server-memory")
	tools := fmt.Sprintf(`  unused.tool:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/unused"}
upstreams:
  memory:
    command: [%q, %q]
    env: {MEMORY_FILE_PATH: %q}
    reads: [read_graph]
    approvers: [U1]
`, node, memory, filepath.Join(b.TempDir(), "gateway.jsonl"))
	s := startServeProcess(b, quorumEnv(b, storetest.NewURL(b), bottest.New(b), tools))
	waitForUpstreams(b, s.base, "memory")

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	through, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{smokeToken}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer through.Close()
	cmd := exec.Command(node, memory)
	cmd.Env = append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(b.TempDir(), "direct.jsonl"))
	direct, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()

	call := func(session *mcp.ClientSession, name string) time.Duration {
		start := time.Now()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", name, err, res)
		}
		return time.Since(start)
	}
	// Warm both paths, then alternate, so that the machine's noise falls
	// on both alike.
	for range 20 {
		call(through, "memory__read_graph")
		call(direct, "read_graph")
	}
	viaGateway, viaDirect := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		viaGateway = append(viaGateway, call(through, "memory__read_graph"))
		viaDirect = append(viaDirect, call(direct, "read_graph"))
	}
	b.StopTimer()
	quantile := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(quantile(viaDirect, 0.5), "direct-p50-ms")
	b.ReportMetric(quantile(viaDirect, 0.99), "direct-p99-ms")
	b.ReportMetric(quantile(viaGateway, 0.5), "gateway-p50-ms")
	b.ReportMetric(quantile(viaGateway, 0.99), "gateway-p99-ms")
	b.ReportMetric(quantile(viaGateway, 0.99)-quantile(viaDirect, 0.99), "added-p99-ms")
}

// bearer adds the agent's token to every request.
type bearer struct{ token string }

func (t bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}

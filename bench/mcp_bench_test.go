package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPSearch measures a memory_search round trip as an agent
// makes it: the MCP SDK's client calls the tool of `bbengine mcp` and
// waits for its result, over the memory of every golden Claude Code
// session (imported once). Sub-benchmarks:
//
//   - transport=inmemory runs the server in this process
//     (cli.NewMCPServer) over the SDK's in-memory transports;
//     transport=stdio runs the built binary as a subprocess over its
//     stdin and stdout, as Claude Code does.
//   - memory=local has the server open the data directory itself (it
//     keeps it open across a burst of calls and opens it again every few
//     seconds, so the figures include those reopens); memory=proxy has a
//     running `bbengine proxy` own the directory, and each call asks its
//     loopback query endpoint.
//
// The queries rotate over a few phrasings. It reports p50-µs and p95-µs;
// the target is a p95 under 10 ms.
func BenchmarkMCPSearch(b *testing.B) {
	src := filepath.Join("..", "..", "shared", "agentlogs-golden", "claude")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("golden agent logs not present: %v", err)
	}
	dir := b.TempDir()
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, &out, &errb); code != 0 {
		b.Fatalf("import: exit %d\n%s%s", code, out.String(), errb.String())
	}
	bin := filepath.Join(b.TempDir(), "bbengine")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/bbengine/bbengine").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, transport := range []string{"inmemory", "stdio"} {
		for _, mem := range []string{"local", "proxy"} {
			b.Run("transport="+transport+"/memory="+mem, func(b *testing.B) {
				if mem == "proxy" {
					up, err := serve(lagUpstream{})
					if err != nil {
						b.Fatal(err)
					}
					defer up.close()
					px, err := startBBProxy(dir, up.url)
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						if err := px.stop(); err != nil {
							b.Error(err)
						}
					}()
					if _, err := px.queries(dir); err != nil {
						b.Fatal(err)
					}
				}
				var cs *mcp.ClientSession
				client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
				ctx := context.Background()
				if transport == "inmemory" {
					s, closeMem := cli.NewMCPServer(dir, b.Logf)
					defer closeMem()
					st, ct := mcp.NewInMemoryTransports()
					ss, err := s.Connect(ctx, st, nil)
					if err != nil {
						b.Fatal(err)
					}
					defer ss.Close()
					if cs, err = client.Connect(ctx, ct, nil); err != nil {
						b.Fatal(err)
					}
				} else {
					cmd := exec.Command(bin, "--dir", dir, "mcp")
					cmd.Env = append(os.Environ(), "HOME="+b.TempDir())
					cmd.Stderr = os.Stderr
					var err error
					if cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil); err != nil {
						b.Fatal(err)
					}
				}
				defer cs.Close()
				benchMCPSearch(b, cs)
			})
		}
	}
}

func benchMCPSearch(b *testing.B, cs *mcp.ClientSession) {
	queries := []string{"which test fails", "decided to use", "build error", "README", "config file", "session viewer", "parse the log", "TODO"}
	n := 0
	op := func() time.Duration {
		q := queries[n%len(queries)]
		n++
		t0 := time.Now()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": q, "k": 5}})
		d := time.Since(t0)
		if err != nil {
			b.Fatalf("memory_search %q: %v", q, err)
		}
		if res.IsError {
			b.Fatalf("memory_search %q: tool error %v", q, res.Content)
		}
		return d
	}
	for range 20 { // warm up: the directory opened, the index's caches
		op()
	}
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		lat = append(lat, op())
	}
	slices.Sort(lat)
	b.ReportMetric(Micros(Percentile(lat, 50)), "p50-µs")
	b.ReportMetric(Micros(Percentile(lat, 95)), "p95-µs")
}

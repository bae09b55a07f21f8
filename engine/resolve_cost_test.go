package engine

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkResolve resolves the decisions, constraints and threads of the
// 11th of a project's 100 sessions, each stating a cache choice, two
// counted settings and an open question: the case where every later
// session is a candidate. Reported per artifact.
func BenchmarkResolve(b *testing.B) {
	dir := b.TempDir()
	e, log := memoryEngine(b, dir)
	defer log.Close()
	defer e.Close()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for s := 0; s < 100; s++ {
		l := newClaudeLog(fmt.Sprintf("55555555-0000-4000-8000-%012d", s))
		l.T = start.Add(time.Duration(s) * time.Hour)
		l.User(fmt.Sprintf("For the cache layer %d, use redis. Set the worker pool %d to %d workers. Queue jobs %d with concurrency %d.", s, s, s+2, s, s+5))
		l.Reply(textBlock(fmt.Sprintf("Done. Should the module %d export its types?", s)))
		writeSession(b, e, dir, l)
	}
	arts, err := e.Artifacts("claude:55555555-0000-4000-8000-000000000010")
	if err != nil || len(arts) == 0 {
		b.Fatal(err, len(arts))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, a := range arts {
			if _, err := e.Resolve(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(arts))/1e3, "µs/artifact")
}

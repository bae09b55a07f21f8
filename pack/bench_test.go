package pack

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkBuild builds packs for a session of 1,000 tasks and 100k
// artifacts (per task: an outcome, two decisions, a constraint, an open
// thread and 95 transcript segments), each for another task
// description, and reports the p50 and p95 build time. The target is a
// p95 under 50 ms.
func BenchmarkBuild(b *testing.B) {
	for _, c := range []struct{ tasks, segs int }{{100, 95}, {1000, 95}} {
		arts := session(c.tasks, c.segs, 1)
		b.Run(fmt.Sprintf("tasks=%d/artifacts=%d", c.tasks, len(arts)), func(b *testing.B) {
			Count("warm the tokenizer")
			tasks := []string{"fix the retry backoff in the queue worker", "speed up the parser and lexer", "add metrics to the router handler",
				"migrate the schema of the storage bucket", "shard the index snapshot", "tune compaction in internal/storage/shard.go"}
			var ds []time.Duration
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				p, err := Build(&Input{Session: "s1", Task: tasks[i%len(tasks)], TaskID: fmt.Sprintf("task-%d", i), Artifacts: arts, Budget: DefaultBudget()})
				ds = append(ds, time.Since(t0))
				if err != nil || p.Tokens > 1200 {
					b.Fatal(err, p.Tokens)
				}
				i++
			}
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

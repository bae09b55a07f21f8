package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/internal/bodybuf"
)

// growingSession is a Claude Code-like session of turns turns whose last
// request is about lastKB: each turn adds an assistant text and tool
// call and a tool result, and the cache marker moves to the newest
// message.
func growingSession(session string, turns, lastKB int) []fx {
	cv := &conversation{session: session, system: strings.Repeat("You are a coding agent. Read before you edit. ", 300), model: "claude-sonnet-4-5"}
	cv.user("refactor the storage layer in " + session)
	per := lastKB << 10 / turns
	var out []fx
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("toolu_%s_%d", session, i)
		r := anthropicReply{text: fmt.Sprintf("Step %d: I read the module and now change how frames are written.", i),
			tools: []obj{{"id": id, "name": "Bash", "input": obj{"command": fmt.Sprintf("go test ./pkg%d/...", i%9)}}},
			in:    100 + i, out: 40, cache: 1000 * i}
		out = append(out, fx{session: session, req: markedRequest(cv), resp: r.stream(cv.model)})
		cv.assistant(r)
		var res strings.Builder
		for j := 0; res.Len() < per-200; j++ {
			fmt.Fprintf(&res, "%4d\tfunc step%d_%d(w io.Writer) error { return write(w, %d) }\n", j+1, i, j, i*j)
		}
		cv.user([]any{obj{"type": "tool_result", "tool_use_id": id, "content": res.String()}})
	}
	return out
}

// BenchmarkDeriveTurn derives a 300-turn session (history resent every
// turn, about 700 KB by the end) one turn at a time, as the proxy does,
// and reports the time and allocations of deriving turns 10, 100 and 300
// (each the mean over the ten turns up to it): flat in N when the cost
// of a turn follows its new bytes. memns/turn@N is the part of ns/turn@N
// spent deriving memory (from the Yield before it to OnMemory after it).
// One op is the whole session.
//
//	go test -run '^$' -bench DeriveTurn -benchtime 3x ./engine
func BenchmarkDeriveTurn(b *testing.B) {
	const turns = 300
	xs := growingSession("grow", turns, 700)
	// Not a pass over every 700 KB body given back.
	b.Cleanup(func(old bool) func() { return func() { bodybuf.SetScribble(old) } }(bodybuf.SetScribble(false)))
	b.ReportAllocs()
	b.SetBytes(int64(len(xs[len(xs)-1].req)))
	at := map[int]string{10: "ns/turn@10", 100: "ns/turn@100", 300: "ns/turn@300"}
	ns, allocs, mem := map[int]float64{}, map[int]float64{}, map[int]float64{}
	runs := 0
	for b.Loop() {
		runs++
		dir, log := newData(b)
		var memStart time.Time
		var memWin time.Duration
		e := open(b, dir, log, &Options{
			Yield:    func(context.Context) time.Duration { memStart = time.Now(); return 0 },
			OnMemory: func() { memWin += time.Since(memStart) },
		})
		var c clock
		var ms runtime.MemStats
		var win time.Duration
		var winAllocs uint64
		for i, x := range xs {
			writeWAL(b, log, &c, uint64(i), []fx{x})
			runtime.ReadMemStats(&ms)
			a0 := ms.Mallocs
			t0 := time.Now()
			if _, err := e.CatchUp(context.Background()); err != nil {
				b.Fatal(err)
			}
			win += time.Since(t0)
			runtime.ReadMemStats(&ms)
			winAllocs += ms.Mallocs - a0
			n := i + 1
			if n%10 == 0 {
				if _, ok := at[n]; ok {
					ns[n] += float64(win) / 10
					allocs[n] += float64(winAllocs) / 10
					mem[n] += float64(memWin) / 10
				}
				win, winAllocs, memWin = 0, 0, 0
			}
		}
		e.Close()
		log.Close()
	}
	for n, name := range at {
		b.ReportMetric(ns[n]/float64(runs), name)
		b.ReportMetric(allocs[n]/float64(runs), strings.Replace(name, "ns/", "allocs/", 1))
		b.ReportMetric(mem[n]/float64(runs), "mem"+name)
	}
}

// BenchmarkDeriveProjectSession derives one new imported session of a
// project that has earlier=N sessions already: flat in N when a session
// costs what its own bytes cost.
//
//	go test -run '^$' -bench DeriveProjectSession -benchtime 50x ./engine
func BenchmarkDeriveProjectSession(b *testing.B) {
	for _, earlier := range []int{0, 200} {
		b.Run(fmt.Sprintf("earlier=%d", earlier), func(b *testing.B) {
			dir := b.TempDir()
			e, log := memoryEngine(b, dir)
			defer log.Close()
			defer e.Close()
			n := 0
			add := func() {
				n++
				l := newClaudeLog(fmt.Sprintf("44444444-0000-4000-8000-%012d", n))
				l.User(fmt.Sprintf("Pick a store for part %d.", n))
				l.Reply(textBlock(fmt.Sprintf("We decided to use SQLite for part %d because it is one file. TODO: vacuum part %d weekly.", n, n)))
				l.Reply(use("toolu_1", "Bash", map[string]any{"command": "go test ./..."}))
				l.Result("toolu_1", "ok  \tgithub.com/x/store\t0.02s", false)
				l.Reply(textBlock("Done: the store is in place."))
				path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", n))
				if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
					b.Fatal(err)
				}
				fi, err := ReadImport("claude", path, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := AppendImport(e.WAL(), fi.Records); err != nil {
					b.Fatal(err)
				}
			}
			for range earlier {
				add()
			}
			if _, err := e.CatchUp(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				add()
				if _, err := e.CatchUp(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

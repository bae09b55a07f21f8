package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
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
// of a turn follows its new bytes. One op is the whole session.
//
//	go test -run '^$' -bench DeriveTurn -benchtime 3x ./engine
func BenchmarkDeriveTurn(b *testing.B) {
	const turns = 300
	xs := growingSession("grow", turns, 700)
	b.ReportAllocs()
	b.SetBytes(int64(len(xs[len(xs)-1].req)))
	at := map[int]string{10: "ns/turn@10", 100: "ns/turn@100", 300: "ns/turn@300"}
	ns, allocs := map[int]float64{}, map[int]float64{}
	runs := 0
	for b.Loop() {
		runs++
		dir, log := newData(b)
		e := open(b, dir, log, nil)
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
				}
				win, winAllocs = 0, 0
			}
		}
		e.Close()
		log.Close()
	}
	for n, name := range at {
		b.ReportMetric(ns[n]/float64(runs), name)
		b.ReportMetric(allocs[n]/float64(runs), strings.Replace(name, "ns/", "allocs/", 1))
	}
}

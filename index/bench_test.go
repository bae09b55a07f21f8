package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/bbengine/bbengine/engine"
)

// gen makes deterministic synthetic artifacts: titles and texts with
// identifiers, paths, commands and errors, in sessions of 100 artifacts
// over 10 tasks.
type gen struct {
	r     *rand.Rand
	ids   []string
	paths []string
}

var (
	genVerbs = []string{"parse", "read", "write", "open", "close", "flush", "apply", "sync", "encode", "decode",
		"handle", "build", "load", "store", "merge", "split", "scan", "rotate", "compact", "index"}
	genNouns = []string{"Frame", "Segment", "Header", "Request", "Response", "Batch", "Snapshot", "Cursor", "Token",
		"Session", "Artifact", "Event", "Record", "Offset", "Buffer", "Config", "Writer", "Reader", "Index", "Query"}
	genSuffixes = []string{"", "Locked", "V2", "Async", "Ctx"}
	genDirs     = []string{"wal", "engine", "proxy", "index", "pack", "codec/frame", "codec/llm", "cli", "internal/fsutil"}
	genWords    = strings.Fields(`the a to of and in is that it for on with as this we be not are at by or from
		but have use will can should do if when then so after before test run fix error file change add remove
		update check value case return call handle data write read store cache retry timeout memory disk batch
		because instead decided must never always flaky failing passes broken slow fast torn replay merge
		snapshot crash restart lock race deadlock leak budget limit cap size order sort key prefix range`)
	genCommands = []string{"go test ./%s/...", "go test -race -run Test%s ./%s", "go vet ./...", "git diff --stat",
		"rg -n %s", "go build ./...", "make lint", "gofmt -l %s"}
	genErrors = []string{"panic: runtime error: index out of range [%d] with length %d", "undefined: %s",
		"--- FAIL: Test%s (0.%02ds)", "%s: context deadline exceeded", "open %s: no such file or directory"}
)

func newGen(seed uint64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(seed, 7))}
	for _, v := range genVerbs {
		for _, n := range genNouns {
			for _, s := range genSuffixes {
				g.ids = append(g.ids, v+n+s)
			}
		}
	}
	for _, d := range genDirs {
		for _, n := range genNouns {
			f := d + "/" + strings.ToLower(n)
			g.paths = append(g.paths, f+".go", f+"_test.go")
		}
	}
	return g
}

// skew picks from n items, favouring the first ones (roughly Zipf).
func (g *gen) skew(n int) int { f := g.r.Float64(); return int(f * f * f * float64(n)) }

func (g *gen) id() string   { return g.ids[g.skew(len(g.ids))] }
func (g *gen) path() string { return g.paths[g.skew(len(g.paths))] }
func (g *gen) word() string { return genWords[g.skew(len(genWords))] }

func (g *gen) sentence() string {
	var b strings.Builder
	n := 6 + g.r.IntN(12)
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch g.r.IntN(10) {
		case 0:
			b.WriteString(g.id())
		case 1:
			b.WriteString(g.path())
		default:
			b.WriteString(g.word())
		}
	}
	b.WriteString(". ")
	return b.String()
}

func (g *gen) command() string {
	c := genCommands[g.r.IntN(len(genCommands))]
	switch strings.Count(c, "%s") {
	case 1:
		return fmt.Sprintf(c, genDirs[g.r.IntN(len(genDirs))])
	case 2:
		return fmt.Sprintf(c, g.id(), genDirs[g.r.IntN(len(genDirs))])
	}
	return c
}

func (g *gen) errorLine() string {
	switch e := genErrors[g.r.IntN(len(genErrors))]; strings.Count(e, "%") {
	case 2:
		if strings.Contains(e, "%d") {
			return fmt.Sprintf(e, g.r.IntN(9), g.r.IntN(9))
		}
		return fmt.Sprintf(e, g.id(), g.r.IntN(99))
	default:
		if strings.Contains(e, "open ") {
			return fmt.Sprintf(e, g.path())
		}
		return fmt.Sprintf(e, g.id())
	}
}

// artifact makes the i-th artifact of session s.
func (g *gen) artifact(s string, i int) engine.Artifact {
	task := i/10 + 1
	a := engine.Artifact{
		ID: fmt.Sprintf("%s-%03d", s, i), Session: s, Task: fmt.Sprintf("turn-%d", task), TaskN: task,
		Last: 1_700_000_000_000_000_000 + int64(i)*1e9, Builder: engine.MemoryVersion,
	}
	switch k := g.r.IntN(10); {
	case k < 1:
		a.Type, a.Status = engine.ArtifactDecision, "active"
		a.Title = fmt.Sprintf("use %s instead of %s for %s", g.id(), g.id(), g.word())
		if g.r.IntN(5) == 0 {
			a.Status = "superseded"
		}
	case k < 2:
		a.Type, a.Status = engine.ArtifactConstraint, "active"
		a.Title = fmt.Sprintf("%s %s %s in %s", []string{"must", "must not", "never", "always"}[g.r.IntN(4)], g.word(), g.id(), g.path())
	case k < 3:
		a.Type, a.Status = engine.ArtifactThread, "open"
		a.Title = fmt.Sprintf("TODO: %s %s in %s", g.word(), g.id(), g.path())
	case k < 4:
		a.Type, a.Status = engine.ArtifactOutcome, []string{"success", "fail", "blocked"}[g.r.IntN(3)]
		a.Title = fmt.Sprintf("%s %s", g.id(), g.sentence())
		a.Commands = []string{g.command(), g.command()}
		a.Errors = []string{g.errorLine()}
	default:
		a.Type = engine.ArtifactSegment
		a.Title = g.sentence()
	}
	var b strings.Builder
	for range 2 + g.r.IntN(6) {
		b.WriteString(g.sentence())
	}
	a.Text = b.String()
	// A decision's subject, statement and context, a constraint's
	// statement: from what is already drawn, so that the random stream,
	// and every other artifact, stays as it was.
	switch a.Type {
	case engine.ArtifactDecision:
		words := strings.Fields(a.Title)
		ctx, _, _ := strings.Cut(a.Text, ". ")
		a.Decision = &engine.Decision{Statement: a.Title, Subject: words[len(words)-1], Rationale: ctx}
	case engine.ArtifactConstraint:
		a.Constraint = &engine.Constraint{Statement: a.Title}
	}
	a.Files = []string{g.path()}
	a.Symbols = []string{g.id()}
	if g.r.IntN(3) == 0 {
		a.Files = append(a.Files, g.path())
	}
	return a
}

// genSource is a Source of n generated artifacts in sessions of 100.
type genSource struct {
	n     int
	seed  uint64
	bytes int
}

func (s *genSource) MemoryStates() ([]engine.MemoryState, error) {
	var out []engine.MemoryState
	for i := 0; i*100 < s.n; i++ {
		out = append(out, engine.MemoryState{Session: fmt.Sprintf("sess%05d", i), Digest: "v1", Tasks: 10})
	}
	return out, nil
}

func (s *genSource) Artifacts(session string) ([]engine.Artifact, error) {
	var i int
	fmt.Sscanf(session, "sess%05d", &i)
	g := newGen(s.seed + uint64(i))
	arts := make([]engine.Artifact, 0, 100)
	for j := range min(100, s.n-i*100) {
		arts = append(arts, g.artifact(session, j))
		s.bytes += docBytes(&arts[j])
	}
	return arts, nil
}

// benchIndexes are the search benchmarks' indexes, built once per
// process in temporary directories that TestMain removes; with
// BBENGINE_INDEX_BENCH_DIR set, in that directory, where they are kept
// and reused by later runs (building 100k artifacts takes a minute).
var benchIndexes struct {
	sync.Mutex
	byN  map[int]*Index
	dirs []string
}

func benchIndex(b *testing.B, n int) *Index {
	benchIndexes.Lock()
	defer benchIndexes.Unlock()
	if x := benchIndexes.byN[n]; x != nil {
		return x
	}
	var dir string
	if keep := os.Getenv("BBENGINE_INDEX_BENCH_DIR"); keep != "" {
		// gen2: decisions and constraints carry their fields.
		dir = filepath.Join(keep, fmt.Sprintf("gen2-n%d", n))
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "bbindex-bench-"); err != nil {
			b.Fatal(err)
		}
		benchIndexes.dirs = append(benchIndexes.dirs, dir)
	}
	x, err := Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	src := &genSource{n: n, seed: 1}
	if _, err := x.Sync(src); err != nil {
		b.Fatal(err)
	}
	st, _ := x.Stats()
	b.Logf("built index of %d artifacts in %v (%.0f docs/s, %.1f MB text, %.1f MB on disk)",
		st.Docs, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds(),
		float64(src.bytes)/1e6, float64(st.Bytes)/1e6)
	if benchIndexes.byN == nil {
		benchIndexes.byN = map[int]*Index{}
	}
	benchIndexes.byN[n] = x
	return x
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, x := range benchIndexes.byN {
		x.Close()
	}
	for _, d := range benchIndexes.dirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// BenchmarkIndex applies sessions of 500 generated artifacts, one Bluge
// batch each, to a growing index.
func BenchmarkIndex(b *testing.B) {
	b.Run("batch=500", func(b *testing.B) {
		x, err := Open(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		g := newGen(42)
		mk := func(i int) []engine.Artifact {
			s := fmt.Sprintf("bench%05d", i)
			arts := make([]engine.Artifact, 500)
			for j := range arts {
				arts[j] = g.artifact(s, j)
			}
			return arts
		}
		size := 0
		for _, a := range mk(-1) {
			size += docBytes(&a)
		}
		b.SetBytes(int64(size))
		b.ReportAllocs()
		i, docs := 0, 0
		var spent time.Duration
		for b.Loop() {
			b.StopTimer()
			arts := mk(i)
			b.StartTimer()
			start := time.Now()
			if err := x.Apply(engine.MemoryState{Session: arts[0].Session, Digest: "v1"}, arts); err != nil {
				b.Fatal(err)
			}
			spent += time.Since(start)
			i++
			docs += len(arts)
		}
		b.ReportMetric(float64(docs)/spent.Seconds(), "docs/s")
	})
}

// benchQueries are the fixed query set of BenchmarkSearch: identifiers,
// paths, words, commands, errors; some scoped to a session and task.
var benchQueries = []Query{
	{Text: "parseFrameHeader"},
	{Text: "wal/segment.go"},
	{Text: "torn write replay"},
	{Text: "go test ./wal/..."},
	{Text: "index out of range"},
	{Text: "decided to use readSnapshot instead", Session: "sess00003"},
	{Text: "flaky test timeout", Types: []engine.ArtifactType{engine.ArtifactThread}},
	{Text: "TODO handle crash in proxy/request.go"},
	{Text: "encodeBatchAsync"},
	{Text: "mergeSegmentLocked compact", Session: "sess00007", Task: "turn-3"},
	{Text: "must never log secrets"},
	{Text: "--race"},
	{Text: "undefined: readCursorCtx"},
	{Text: "retry backoff cache"},
	{Text: "codec/frame/header_test.go"},
	{Text: "the"},
	{Text: "storeIndexV2 flushWriter", K: 20},
	{Text: "context deadline exceeded", Session: "sess00001"},
	{Text: "lock race deadlock leak"},
	{Text: "rotateOffset"},
}

// BenchmarkSearch runs the fixed query set against indexes of n
// generated artifacts and reports the p50 and p99 latency of one search
// and the process CPU per search.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			benchSearch(b, benchIndex(b, n), false)
		})
	}
}

// BenchmarkSearch100k is the search goal's benchmark: the fixed query
// set against 100k generated artifacts (1,000 sessions of 100, Zipf-like
// identifiers, paths and words), p50 and p99 of one Search, the call
// bbengine mem search and the MCP memory_search make. path=direct is
// Search as it runs; path=bluge runs its first stage as Bluge's
// searchers and collector, as Search did before the direct scorer, on
// the same index in the same run. Set BBENGINE_INDEX_BENCH_DIR to keep
// the index between runs.
func BenchmarkSearch100k(b *testing.B) {
	x := benchIndex(b, 100000)
	for _, path := range []string{"direct", "bluge"} {
		b.Run("path="+path, func(b *testing.B) { benchSearch(b, x, path == "bluge") })
	}
}

func benchSearch(b *testing.B, x *Index, viaBluge bool) {
	for _, q := range benchQueries { // warm up
		if _, err := x.search(q, viaBluge); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	b.ReportAllocs()
	i := 0
	cpu := processCPU()
	for b.Loop() {
		start := time.Now()
		if _, err := x.search(benchQueries[i%len(benchQueries)], viaBluge); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	// Process CPU per search: steadier than latency on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
}

// turnSource is a Source of one growing session: turns of 6 artifacts,
// the last turn's re-derived (its text changes) on every pass, as the
// engine re-derives the task in progress.
type turnSource struct {
	arts []engine.Artifact
	pass int
}

const turnArts = 6

func newTurnSource(turns int) *turnSource {
	g := newGen(3)
	s := &turnSource{}
	for i := range turns * turnArts {
		a := g.artifact("long", i)
		a.TaskN = i/turnArts + 1
		a.Task = fmt.Sprintf("turn-%d", a.TaskN)
		s.arts = append(s.arts, a)
	}
	return s
}

// next re-derives the last turn.
func (s *turnSource) next() {
	s.pass++
	for i := len(s.arts) - turnArts; i < len(s.arts); i++ {
		a := &s.arts[i]
		a.Text = fmt.Sprintf("%s pass %d", strings.TrimRight(a.Text, " 0123456789pas"), s.pass)
		a.Last += 1e9
	}
}

func (s *turnSource) MemoryStates() ([]engine.MemoryState, error) {
	return []engine.MemoryState{{Session: "long", Digest: fmt.Sprint(s.pass), Tasks: len(s.arts) / turnArts}}, nil
}

func (s *turnSource) Artifacts(string) ([]engine.Artifact, error) { return s.arts, nil }

// turnSums is turnSource as a SumSource: its sums hash what the passes
// change (text and time), as a store's sums of stored bytes would.
type turnSums struct{ *turnSource }

func (s turnSums) ArtifactSums(string) ([]string, []uint64, error) {
	order := make([]int, len(s.arts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(s.arts[i].ID, s.arts[j].ID) })
	ids := make([]string, len(s.arts))
	sums := make([]uint64, len(s.arts))
	for k, i := range order {
		a := &s.arts[i]
		ids[k] = a.ID
		sums[k] = xxhash.Sum64String(a.Text) ^ uint64(a.Last)
	}
	return ids, sums, nil
}

func (s turnSums) ArtifactsByID(ids []string) ([]engine.Artifact, error) {
	var out []engine.Artifact
	for i := range s.arts {
		if slices.Contains(ids, s.arts[i].ID) {
			out = append(out, s.arts[i])
		}
	}
	return out, nil
}

// BenchmarkSyncTurn measures the index's cost of one derivation pass of
// a growing session at turn N: a Sync after the last turn's artifacts
// changed. mode=changed is the index as it is (only changed documents
// are sent); mode=whole forgets which sessions it verified before each
// pass, which sends every artifact and looks the session up in Bluge, as
// the index did before content sums; mode=sums is mode=changed through a
// SumSource, as the engine is, which reads only the changed artifacts.
// The cost of mode=changed and mode=sums should be flat in N; docs/op is what reaches Bluge, cpu-ms/op the process's CPU
// per pass, Bluge's background merges and persisting included.
func BenchmarkSyncTurn(b *testing.B) {
	for _, mode := range []string{"changed", "sums", "whole"} {
		for _, turns := range []int{10, 100, 300} {
			b.Run(fmt.Sprintf("mode=%s/turns=%d", mode, turns), func(b *testing.B) {
				x, err := Open(b.TempDir(), nil)
				if err != nil {
					b.Fatal(err)
				}
				defer x.Close()
				turn := newTurnSource(turns)
				var src Source = turn
				if mode == "sums" {
					src = turnSums{turn}
				}
				if _, err := x.Sync(src); err != nil {
					b.Fatal(err)
				}
				docs := 0
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					turn.next()
					if mode == "whole" {
						clear(x.verified)
					}
					st, err := x.Sync(src)
					if err != nil {
						b.Fatal(err)
					}
					docs += st.Docs
				}
				b.ReportMetric(float64(docs)/float64(b.N), "docs/op")
				b.ReportMetric(float64(processCPU()-cpu)/1e6/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

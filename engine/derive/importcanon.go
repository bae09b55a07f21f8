package derive

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/agentlog"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// Imported logs are derived per session, not per frame: an import frame
// adds its record to its file's state and marks the session pending; when
// a pass has read every frame, each pending session is derived again from
// all the records of its files (read back from the WAL) by its source's
// Importer, and its events are replaced. A session's timeline therefore
// depends only on the set of its records, so an incremental import and a
// rebuild give the same bytes, and a file imported in pieces (a live
// session, a file that grew) derives as if imported at once.

// ImportFileState is what the engine knows of one imported file.
type ImportFileState struct {
	// Path is the file's path as the importer named it (a compressed
	// file is named without its ".zst", so compressing a log does not
	// make it a new file).
	Path    string `json:"path"`
	Source  string `json:"source"`
	Session string `json:"session"`
	// Gen is the generation in use: only its records are derived.
	Gen uint64 `json:"gen"`
	// End is the offset just after the last line imported (for a whole
	// file record, the file's size) and Line that line's number: where a
	// file that grew is read from.
	End  int64 `json:"end"`
	Line int64 `json:"line"`
	// Records is the number of records of this generation.
	Records int64 `json:"records"`
	// HeadSHA and LastSHA are the SHA-256 (hex) of the first and the
	// last record imported, LastOffset the last record's offset: an
	// importer checks them to tell a file that grew from one that was
	// replaced.
	HeadSHA    string `json:"head_sha"`
	LastSHA    string `json:"last_sha"`
	LastOffset int64  `json:"last_offset"`
	// Rows, for a database's unit (exchange.ImportRow), fingerprint
	// the rows last imported whose time_updated is within RowWindow of
	// End (then the newest imported), and always the row whose id names
	// the unit (its session): see RowChanged.
	Rows map[string]RowPrint `json:"rows,omitempty"`
	// Runs locate the records' frames in the WAL.
	Runs []walRun `json:"runs"`
}

// walRun is a stretch of the WAL holding N import frames of one file
// from offset Start to Last, possibly among other frames.
type walRun struct {
	Start uint64 `json:"start"`
	Last  uint64 `json:"last"`
	N     int64  `json:"n"`
}

// runGap is how far apart two frames of one file may be and still share a
// run: reading a run back skips the other frames in it.
const runGap = 1 << 20

// importFrame takes one import frame at WAL offset off.
func (c *canonicalizer) importFrame(off uint64, p []byte) error {
	rec, err := exchange.DecodeImport(p)
	if err != nil {
		c.e.opts.Logf("engine: import frame at WAL offset %d does not decode: %v (skipped)", off, err)
		return nil
	}
	if c.frames != nil {
		c.frames.add(off, rec)
	}
	if rec.File == "" || rec.Session == "" || rec.Source == "" {
		c.e.opts.Logf("engine: import frame at WAL offset %d names no file, session or source; skipped", off)
		return nil
	}
	st, err := c.importFile(rec.File)
	if err != nil {
		return err
	}
	whole := rec.Kind != exchange.ImportLine && rec.Kind != exchange.ImportRow
	switch {
	case st.Records > 0 && (st.Source != rec.Source || st.Session != rec.Session) && rec.Gen <= st.Gen:
		c.e.opts.Logf("engine: import frame at WAL offset %d: %s was imported as %s session %s, not %s %s; skipped",
			off, rec.File, st.Source, st.Session, rec.Source, rec.Session)
		return nil
	case rec.Gen < st.Gen:
		return nil // a record of a replaced generation
	case rec.Gen > st.Gen || whole:
		// A new generation (or a new version of a whole-file record)
		// replaces what the file held.
		if st.Session != "" && st.Session != rec.Session {
			if err := c.moveImportFile(rec.File, st.Session); err != nil {
				return err
			}
		}
		*st = ImportFileState{Path: rec.File, Gen: rec.Gen}
	case rec.Offset < st.End && rec.Kind == exchange.ImportLine:
		return nil // already imported (a second import of the same lines)
	}
	if st.Session != rec.Session {
		sess, err := c.session(rec.Session)
		if err != nil {
			return err
		}
		if sess.s.Import == nil {
			sess.s.Source = "import:" + rec.Source
			sess.s.Import = &ImportInfo{Source: rec.Source}
		}
		if i, found := slices.BinarySearch(sess.s.Import.Files, rec.File); !found {
			sess.s.Import.Files = slices.Insert(sess.s.Import.Files, i, rec.File)
			sess.dirty = true
		}
	}
	st.Path, st.Source, st.Session = rec.File, rec.Source, rec.Session
	if st.Records == 0 {
		sum := sha256.Sum256(rec.Data)
		st.HeadSHA = hex.EncodeToString(sum[:])
		st.LastSHA = st.HeadSHA
		delete(c.lastRecs, rec.File)
	} else {
		// Hashing every record cost more than keeping the last one
		// until the state is written (writeImportFiles).
		c.lastRecs[rec.File] = append(c.lastRecs[rec.File][:0], rec.Data...)
	}
	st.LastOffset = rec.Offset
	st.Records++
	switch {
	case rec.Kind == exchange.ImportRow:
		rowMark(st, &rec)
	case whole:
		st.End = int64(len(rec.Data))
	default:
		st.End, st.Line = rec.Offset+int64(len(rec.Data))+1, rec.Line
	}
	if n := len(st.Runs); n > 0 && off-st.Runs[n-1].Last <= runGap {
		st.Runs[n-1].Last = off
		st.Runs[n-1].N++
	} else {
		st.Runs = append(st.Runs, walRun{Start: off, Last: off, N: 1})
	}
	c.dirtyFiles[rec.File] = true
	c.markImportPending(rec.Session)
	return nil
}

// RowWindow is how far before the newest time_updated imported of a
// database's unit (ImportFileState.End, in the Offset's unit: opencode's
// milliseconds) its rows are read again and compared with their
// fingerprints: a row rewritten without moving its time_updated past
// the newest (in the same millisecond, a column its writer sets without
// bumping time_updated, a clock stepped back by less than RowWindow) is
// imported again. A row whose time_updated is older than that is not
// read again.
const RowWindow = 5 * 60 * 1000

// RowPrint is the fingerprint of a database row's last imported record:
// its time_updated (the record's Offset) and the first 8 bytes of the
// SHA-256 of its data, in hex.
type RowPrint struct {
	T int64  `json:"t"`
	H string `json:"h"`
}

// RowHash returns the hash of RowPrint of a record whose data is data.
func RowHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// RowSince returns the oldest time_updated of the rows of st's unit an
// importer reads again (see LogFormat.Rows): End - RowWindow.
func (st *ImportFileState) RowSince() int64 { return st.End - RowWindow }

// RowChanged reports whether the row id of st's unit, updated at t and
// recorded as data (the record's Data), differs from its version last
// imported: an importer emits the rows for which it is true among those
// updated since RowSince, and the unit's session row whatever its time.
func (st *ImportFileState) RowChanged(id string, t int64, data []byte) bool {
	p, ok := st.Rows[id]
	return !ok || p.T != t || p.H != RowHash(data)
}

// rowMark moves the mark of st, a database unit's state, to rec, one of
// its rows: End is the newest time_updated imported, Rows fingerprint
// the rows within RowWindow of it and the unit's own (session) row, so
// that the next read takes the rows changed since and none twice (see
// LogFormat.Rows). A record with no id (a database's identity) leaves
// the mark alone. The fingerprints outside the window are dropped when
// End moves into a new window-sized bucket, so that the state stays
// bounded and depends only on the records, in order.
func rowMark(st *ImportFileState, rec *exchange.Import) {
	v, err := agentlog.Fields(rec.Data, "id")
	if err != nil || v[0] == "" {
		return
	}
	id := v[0]
	own := strings.HasSuffix(rec.File, "#"+id)
	if rec.Offset > st.End {
		if st.End/RowWindow != rec.Offset/RowWindow {
			for k, p := range st.Rows {
				if p.T < rec.Offset-RowWindow && !strings.HasSuffix(rec.File, "#"+k) {
					delete(st.Rows, k)
				}
			}
		}
		st.End = rec.Offset
	}
	if !own && rec.Offset < st.End-RowWindow {
		delete(st.Rows, id)
		return
	}
	if st.Rows == nil {
		st.Rows = map[string]RowPrint{}
	}
	st.Rows[id] = RowPrint{T: rec.Offset, H: RowHash(rec.Data)}
}

// importFile returns the cached state of path, loading it.
func (c *canonicalizer) importFile(path string) (*ImportFileState, error) {
	if st := c.files[path]; st != nil {
		return st, nil
	}
	st := &ImportFileState{}
	if _, err := c.e.getJSON(schema.ImportFileKey(path), st); err != nil {
		return nil, err
	}
	if len(c.files) > 4096 {
		for p := range c.files {
			if !c.dirtyFiles[p] {
				delete(c.files, p)
			}
		}
	}
	c.files[path] = st
	return st, nil
}

// moveImportFile takes path out of the file list of session id.
func (c *canonicalizer) moveImportFile(path, id string) error {
	sess, err := c.session(id)
	if err != nil {
		return err
	}
	if sess.s.Import != nil {
		if i, found := slices.BinarySearch(sess.s.Import.Files, path); found {
			sess.s.Import.Files = slices.Delete(sess.s.Import.Files, i, i+1)
			sess.dirty = true
		}
	}
	c.markImportPending(id)
	return nil
}

func (c *canonicalizer) markImportPending(id string) {
	c.ensureBatch()
	if !c.pendingImports[id] {
		c.pendingImports[id] = true
		c.batch.Set(schema.ImportPendingKey(id), nil, nil)
	}
}

// writeImportFiles adds the changed file states to the batch.
func (c *canonicalizer) writeImportFiles() error {
	paths := make([]string, 0, len(c.dirtyFiles))
	for p := range c.dirtyFiles {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if last, ok := c.lastRecs[p]; ok {
			sum := sha256.Sum256(last)
			c.files[p].LastSHA = hex.EncodeToString(sum[:])
			delete(c.lastRecs, p)
		}
		if err := c.setJSON(schema.ImportFileKey(p), c.files[p]); err != nil {
			return err
		}
	}
	clear(c.dirtyFiles)
	return nil
}

// loadPendingImports reads the sessions left pending by an earlier pass.
func (c *canonicalizer) loadPendingImports() error {
	it, err := c.e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{schema.PrefixImportPending}, UpperBound: []byte{schema.PrefixImportPending + 1}})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		c.pendingImports[string(it.Key()[1:])] = true
	}
	return it.Error()
}

// importWindow is how many bytes of sessions' files deriveImports admits
// beyond its window of sessions in a pass of an import (frameCache.paced):
// the sessions of such a pass (8 to 16 MiB of records) are all admitted,
// so that the largest starts first. A larger pass (a rebuild's) keeps to
// the window.
const importWindow = 32 << 20

// deriveImports derives every pending session again. Sessions are
// independent, so each one is read back from the WAL, run through its
// importer and encoded on one of GOMAXPROCS workers; the results go into
// the batch in ordinal order, and the batch is committed whenever it
// holds more than Options.BatchBytes. At most 2 x GOMAXPROCS sessions
// (in an import's pass, importWindow bytes of them) are in flight, so
// memory is bounded by the largest sessions, not by how many are
// pending.
func (c *canonicalizer) deriveImports() error {
	if len(c.pendingImports) == 0 {
		return nil
	}
	// Batches of imported events fill up: allocated whole, not grown
	// from Pebble's default by doubling (twice the allocation).
	batchSize := c.e.opts.BatchBytes + c.e.opts.BatchBytes/4
	c.ensureBatchSize(batchSize)
	if err := c.writeImportFiles(); err != nil {
		return err
	}
	c.dropImportFolds()
	// In ordinal order, so that the events of the sessions that go to
	// the event table (ingest.go) come in key order.
	type pendingSession struct {
		ord uint64
		id  string
	}
	order := make([]pendingSession, 0, len(c.pendingImports))
	for id := range c.pendingImports {
		st, err := c.session(id)
		if err != nil {
			return err
		}
		order = append(order, pendingSession{st.s.Ordinal, id})
	}
	slices.SortFunc(order, func(a, b pendingSession) int { return compareU64(a.ord, b.ord) })
	ids := make([]string, len(order))
	for i := range order {
		ids[i] = order[i].id
	}
	workers := max(1, min(runtime.GOMAXPROCS(0), len(ids)))
	window := 2 * workers
	jobs := newLargestFirst[*importJob]()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// One WAL reader (and its 1 MiB read buffer) per worker.
			wr := c.e.log.NewReader()
			defer wr.Close()
			enc := &eventEncoder{}
			for {
				j, ok := jobs.pop()
				if !ok {
					return
				}
				func() {
					var r importResult
					defer func() { j.res <- r }()
					defer catch(&r.err)
					r = c.e.deriveImportJob(wr, enc, j)
				}()
			}
		})
	}
	defer func() {
		jobs.close()
		wg.Wait()
	}()
	// Sessions are admitted in order while fewer than window, or fewer
	// than importWindow bytes of them, are waiting to be applied, and
	// derived largest first.
	queued := make([]*importJob, len(ids))
	next := 0
	var admitted int64
	paced := c.frames.paced()
	for i, id := range ids {
		for next < len(ids) && (next < i+window || paced && admitted < importWindow) {
			j, err := c.importJob(ids[next])
			if err != nil {
				return err
			}
			queued[next] = j
			admitted += j.size
			jobs.push(j.size, j)
			next++
		}
		j := queued[i]
		queued[i] = nil
		admitted -= j.size
		r := <-j.res
		rethrow(r.err)
		if r.err != nil {
			return r.err
		}
		// A session with no event stored yet has its events go to the
		// event table, the others' to the batch.
		table := false
		if r.im != nil && len(r.events) > 0 {
			st, err := c.session(id)
			if err != nil {
				return err
			}
			if table, err = c.ingestible(st); err != nil {
				return err
			}
		}
		// A batch that would not hold the session's events is
		// committed first, and the next one sized for them.
		need := 0
		for _, v := range r.events {
			need += len(v) + 32 // and the key and lengths
		}
		if table {
			need = 0
		}
		if !c.batch.Empty() && c.batch.Len()+need > batchSize {
			if err := c.commit(); err != nil {
				return err
			}
		}
		c.ensureBatchSize(max(batchSize, need+64<<10))
		if err := c.applyImported(id, j, r, table); err != nil {
			return err
		}
		if c.batch.Len() >= c.e.opts.BatchBytes {
			if err := c.commit(); err != nil {
				return err
			}
			c.ensureBatchSize(batchSize)
		}
	}
	return nil
}

// importJob is one session to derive again: its files' states as they
// are at the end of the pass.
type importJob struct {
	// size is how many bytes of its files the session was imported
	// from.
	size    int64
	id      string
	ordinal uint64
	source  string
	paths   []string
	files   []ImportFileState
	// frames are the import frames the pass read.
	frames *frameCache
	res    chan importResult
}

// importResult is a session derived by its importer, its events encoded
// (events) and as decoding those gives them (im.Events, see handEvent).
type importResult struct {
	im     *Imported // nil when no importer could derive it
	events [][]byte
	err    error
}

// importJob gathers what deriving session id needs.
func (c *canonicalizer) importJob(id string) (*importJob, error) {
	st, err := c.session(id)
	if err != nil {
		return nil, err
	}
	j := &importJob{id: id, ordinal: st.s.Ordinal, frames: c.frames, res: make(chan importResult, 1)}
	if st.s.Import != nil {
		j.paths = slices.Clone(st.s.Import.Files)
	}
	for _, p := range j.paths {
		fs, err := c.importFile(p)
		if err != nil {
			return nil, err
		}
		if fs.Session != id || fs.Records == 0 {
			continue // moved to another session
		}
		j.source = fs.Source
		if IsRows(fs.Source, fs.Path) {
			j.size += fs.Records << 10 // End is a time, not a size
		} else {
			j.size += fs.End
		}
		f := *fs
		f.Runs = slices.Clone(fs.Runs)
		j.files = append(j.files, f)
	}
	if j.source == "" && st.s.Import != nil {
		// Every file moved to another session: the session is emptied,
		// and its source still says how it joins (its keys and group
		// go).
		j.source = st.s.Import.Source
	}
	return j, nil
}

// deriveImportJob reads a session's records back from the WAL with wr,
// derives it and encodes its events with enc. It is safe for concurrent
// use with other readers and encoders.
func (e *Pipeline) deriveImportJob(wr *wal.Reader, enc *eventEncoder, j *importJob) importResult {
	var files []ImportFile
	for i := range j.files {
		recs, ok := j.frames.records(&j.files[i])
		if !ok {
			var err error
			if recs, err = e.readImportRecords(wr, &j.files[i]); err != nil {
				return importResult{err: err}
			}
		}
		files = append(files, ImportFile{Path: j.files[i].Path, Records: recs})
	}
	fn := importers[j.source]
	switch {
	case fn == nil:
		e.opts.Logf("engine: no importer for source %q of session %s (a newer bbengine wrote it?)", j.source, j.id)
		return importResult{}
	case len(files) == 0:
		return importResult{}
	}
	im, err := fn(j.id, files)
	if err != nil {
		e.opts.Logf("engine: import of session %s: %v", j.id, err)
		return importResult{}
	}
	files = nil // the records are not needed any more
	r := importResult{im: im, events: make([][]byte, len(im.Events))}
	enc.resetArena() // this session's events get arenas of their own
	for i := range im.Events {
		ev := &im.Events[i]
		ev.Seq = uint64(i + 1)
		v, err := encodeHanded(enc, ev, e.opts.Redactor)
		if err != nil {
			return importResult{err: fmt.Errorf("engine: event %d of session %s: %w", i+1, j.id, err)}
		}
		r.events[i] = v
	}
	return r
}

// applyImported puts session id, derived by r, into the batch in place
// of its old timeline; with table set, which ingestible allowed, its
// events go to the event table instead.
func (c *canonicalizer) applyImported(id string, j *importJob, r importResult, table bool) error {
	st, err := c.session(id)
	if err != nil {
		return err
	}
	// Drop the old timeline, and the memory folded from it; a session
	// whose events go to the event table (table) has none.
	delete(c.folds, id)
	delete(c.handed, id)
	if !table {
		lo, hi := schema.EventKey(nil, st.s.Ordinal, 0), schema.AppendU64Key(nil, schema.PrefixEvent, st.s.Ordinal+1)
		c.batch.DeleteRange(lo, hi, nil)
		if c.e.opts.Dropped != nil {
			c.e.opts.Dropped(lo, hi)
		}
	}
	s := Session{ID: id, Ordinal: st.s.Ordinal, Source: "import:" + j.source}
	if r.im != nil {
		s = r.im.Session
		s.ID, s.Ordinal = id, st.s.Ordinal
		if s.Source == "" {
			s.Source = "import:" + j.source
		}
		size := 0
		for i, v := range r.events {
			if table {
				err = c.tableSet(s.Ordinal, uint64(i+1), v)
			} else {
				err = c.batch.Set(schema.EventKey(c.keyBuf[:0], s.Ordinal, uint64(i+1)), v, nil)
			}
			if err != nil {
				return err
			}
			size += len(v)
		}
		if joinsByContent(j.source) {
			if err := c.importReplies(s.Ordinal, r.im.Events); err != nil {
				return err
			}
		}
		if c.handedBytes+size <= maxHanded {
			// Memory derivation, later in this pass, takes them
			// instead of reading them back.
			c.handed[id] = r.im.Events
			c.handedBytes += size
		}
		r.im.Events = nil
		s.Events = uint64(len(r.events))
		c.progress.Events += len(r.events)
	}
	if s.Import == nil {
		s.Import = &ImportInfo{Source: j.source}
	}
	s.Import.Files = j.paths
	st.s = s
	st.dirty = true
	// The timeline was replaced, not extended: a memory fold of the old
	// one would take the new events after its count as an extension.
	delete(c.folds, id)
	c.batch.Delete(schema.ImportPendingKey(id), nil)
	delete(c.pendingImports, id)
	if r.im == nil && joinsByContent(j.source) {
		if err := c.importReplies(s.Ordinal, nil); err != nil {
			return err
		}
	}
	if joinsBySource(j.source) || joinsByContent(j.source) {
		c.markMergePending(id)
	}
	return nil
}

// dropImportFolds forgets the memory folds of imported sessions. An
// imported session's timeline is derived again whole whenever its files
// change, so a fold of it is never extended; keeping one per session
// would hold memory that grows with the sessions imported.
func (c *canonicalizer) dropImportFolds() {
	for id, f := range c.folds {
		if f.s.Import != nil {
			delete(c.folds, id)
		}
	}
}

// recordArena is the largest arena readImportRecords copies records
// into (a record larger than it has one of its own size).
const recordArena = 1 << 20

// readImportRecords reads the records of a file's current generation
// back from the WAL with r. Their data share arenas that grow from 64
// KiB to recordArena bytes, so that a small file does not cost a large
// one's.
func (e *Pipeline) readImportRecords(r *wal.Reader, fs *ImportFileState) ([]ImportRecord, error) {
	out := make([]ImportRecord, 0, fs.Records)
	var (
		arena     []byte
		arenaSize int
	)
	for _, run := range fs.Runs {
		if err := r.Seek(run.Start); err != nil {
			return nil, fmt.Errorf("engine: read %s back from WAL offset %d: %w", fs.Path, run.Start, err)
		}
		var n int64
		end := int64(-1)
		for n < run.N && r.Next() {
			h := r.Header()
			if h.Kind != frame.KindImport {
				continue
			}
			p, err := r.Payload()
			if err != nil {
				return nil, fmt.Errorf("engine: read %s back at WAL offset %d: %w", fs.Path, r.Offset(), err)
			}
			rec, err := exchange.DecodeImport(p)
			if err != nil || rec.File != fs.Path || rec.Gen != fs.Gen {
				continue
			}
			if rec.Kind == exchange.ImportLine {
				if rec.Offset < end {
					continue // a duplicate the state skipped too
				}
				end = rec.Offset + int64(len(rec.Data)) + 1
			}
			n++
			if cap(arena)-len(arena) < len(rec.Data) {
				arenaSize = min(max(2*arenaSize, 64<<10), recordArena)
				arena = make([]byte, 0, max(arenaSize, len(rec.Data)))
			}
			start := len(arena)
			arena = append(arena, rec.Data...)
			rec.Data = arena[start:len(arena):len(arena)]
			rec.Source, rec.Session, rec.File, rec.Kind = fs.Source, fs.Session, fs.Path, strings.Clone(rec.Kind)
			out = append(out, ImportRecord{Import: rec, WAL: r.Offset()})
		}
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("engine: read %s back from the WAL: %w", fs.Path, err)
		}
	}
	if len(out) > 0 && out[0].Kind != exchange.ImportLine && out[0].Kind != exchange.ImportRow {
		out = out[len(out)-1:] // a whole-file record: its newest version
	}
	return out, nil
}

// frameCache holds the import frames a pass read, decoded, their data
// copied, in WAL order, so that deriving the pass's sessions need not
// read those frames back from the WAL and decompress them again (most
// of an import's sessions were appended in the pass that derives them).
// It covers the frames from its first to its last offset: every import
// frame between them that decodes is in it. A pass with more than
// maxFrameCache bytes of them (a rebuild's) drops it and reads every
// session back, and derives its sessions a few at a time (see
// deriveImports). deriveImports's workers read it; nothing writes it
// then.
type frameCache struct {
	offs    []uint64
	recs    []exchange.Import
	arena   []byte
	bytes   int
	dropped bool
}

// maxFrameCache bounds a frameCache's data: an import's pass covers
// 8 to 16 MiB of records (see api), a rebuild's the whole WAL.
const maxFrameCache = 24 << 20

// paced reports whether fc holds the frames of a pass of an import
// (api derives an import 8 to 16 MiB at a time), not of a larger one.
func (fc *frameCache) paced() bool { return fc != nil && !fc.dropped }

// add caches rec, decoded from the frame at off; rec.Data is copied.
func (fc *frameCache) add(off uint64, rec exchange.Import) {
	if fc.dropped {
		return
	}
	if fc.bytes+len(rec.Data) > maxFrameCache {
		*fc = frameCache{dropped: true}
		return
	}
	if cap(fc.arena)-len(fc.arena) < len(rec.Data) {
		fc.arena = make([]byte, 0, max(recordArena, len(rec.Data)))
	}
	start := len(fc.arena)
	fc.arena = append(fc.arena, rec.Data...)
	rec.Data = fc.arena[start:len(fc.arena):len(fc.arena)]
	fc.bytes += len(rec.Data)
	fc.offs = append(fc.offs, off)
	fc.recs = append(fc.recs, rec)
}

// records returns what readImportRecords reads of fs, or false when a
// run of fs reaches beyond the frames cached.
func (fc *frameCache) records(fs *ImportFileState) ([]ImportRecord, bool) {
	if fc == nil || len(fc.offs) == 0 {
		return nil, false
	}
	out := make([]ImportRecord, 0, fs.Records)
	for _, run := range fs.Runs {
		if run.Start < fc.offs[0] {
			return nil, false
		}
		i, _ := slices.BinarySearch(fc.offs, run.Start)
		var n int64
		end := int64(-1)
		for ; n < run.N; i++ {
			if i == len(fc.offs) {
				return nil, false // read on in the WAL
			}
			rec := fc.recs[i]
			if rec.File != fs.Path || rec.Gen != fs.Gen {
				continue
			}
			if rec.Kind == exchange.ImportLine {
				if rec.Offset < end {
					continue // a duplicate the state skipped too
				}
				end = rec.Offset + int64(len(rec.Data)) + 1
			}
			n++
			rec.Source, rec.Session, rec.File = fs.Source, fs.Session, fs.Path
			out = append(out, ImportRecord{Import: rec, WAL: fc.offs[i]})
		}
	}
	if len(out) > 0 && out[0].Kind != exchange.ImportLine && out[0].Kind != exchange.ImportRow {
		out = out[len(out)-1:] // a whole-file record: its newest version
	}
	return out, true
}

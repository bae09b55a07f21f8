package wal

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/golang/snappy"
)

// Record is one frame to append. Payload is only read during Append; the
// caller may reuse it once Append returns.
type Record struct {
	Kind     frame.Kind // must be valid and not KindSegmentHeader
	Exchange uint64     // exchange id, 0 when none
	Time     int64      // unix nanoseconds; 0 means the time of the Append call
	Last     bool       // sets frame.FlagLast: the last chunk of a body
	Payload  []byte     // at most frame.MaxPayload bytes
	// Snappy says Payload is already the snappy block of the record's
	// RawLen bytes, shorter than them, to be stored as it is: a caller
	// that writes the same bytes again keeps their compressed form. Only
	// for a log that compresses (Compresses).
	Snappy bool
	RawLen int
}

// Recovery reports what Open did to the last segment: a torn tail (invalid
// bytes with no valid frame after them, left by a crash during a write) was
// truncated, or an empty segment got its header.
type Recovery struct {
	Segment string // path of the segment file
	Offset  uint64 // logical offset where the log now ends
	Dropped int64  // bytes truncated
	Err     error  // why the bytes at Offset were invalid; nil for an empty segment
}

func (r *Recovery) String() string {
	if r.Err == nil {
		return fmt.Sprintf("wal: segment %s was empty; wrote its header", r.Segment)
	}
	return fmt.Sprintf("wal: truncated a torn tail of %d bytes at offset %d in segment %s (%v)", r.Dropped, r.Offset, r.Segment, r.Err)
}

// request is one queued append (frame != nil) or sync (frame == nil).
type request struct {
	frame   []byte // encoded frame, offset already set
	rotate  bool   // start a new segment at segBase before this frame
	segBase uint64
	resume  bool // Resume's request: clear a sticky write error
	done    chan error
}

// maxGroupBytes bounds one write of the writer goroutine.
const maxGroupBytes = 4 << 20

// Log is a segmented write-ahead log. See the package documentation.
type Log struct {
	dir      string
	opts     Options
	readOnly bool
	lock     *os.File
	recovery *Recovery

	// amu orders appends: it assigns offsets and enqueues under the lock so
	// the queue is in offset order.
	amu      sync.Mutex
	closed   bool
	next     uint64 // offset of the next frame
	segBase  uint64 // base of the segment the next frame goes to
	queue    chan *request
	free     chan *request // recycled requests; a free list, not a sync.Pool, so reuse is certain
	reqLists chan *reqList // free list for AppendBatch
	// queued counts the frames on the queue not yet written. It grows
	// under amu and shrinks once the writer has written them: an append
	// that finds it 0 under amu has every earlier frame written and may
	// write its own from its goroutine (see Append).
	queued atomic.Int64
	// nextHint is next, for encoding a frame with its likely offset
	// before amu is taken: a lone appender's guess is right, so its
	// frame is checksummed once.
	nextHint atomic.Uint64

	failed atomic.Pointer[error] // sticky write error

	// wmu is held by whoever writes the active segment: the writer
	// goroutine for a queued group, or an appender writing its own
	// frames when nothing is queued. It guards the fields below.
	wmu   sync.Mutex
	f     *os.File
	pos   int64 // write position in f
	dirty bool  // written since the last sync
	buf   []byte
	one   [1]*request // Append's own group
	// aead encrypts the frames of the active segment, under its data
	// key; nil when the log writes in the clear. create sets it.
	aead cipher.AEAD
	// smu is held across every sync: one made without wmu (the periodic
	// one of SyncInterval, the seal of a segment) keeps rotation and
	// Close from closing its file, and any sync waits for a seal under
	// way, so the log reaches the disk in order. It guards the fields
	// below.
	smu      sync.Mutex
	sealing  *os.File // the segment before the active one, not yet synced and closed
	sealBase uint64   // its base
	// tmu is held across the periodic sync of the active segment, taken
	// after smu, which that sync releases first: a rotation need not
	// wait for it, but a sync that finds dirty false does.
	tmu sync.Mutex

	// Owned by the writer goroutine.
	batch   []*request
	done    chan struct{} // closed when the writer goroutine exits
	wclosed error         // error from the final sync and close

	sealc  chan struct{} // a rotation left a segment to seal
	bgStop chan struct{} // closed by Close to stop the background goroutine
	bgDone chan struct{} // closed when it exits

	// mu guards the fields below; readers take it to see the log's shape.
	mu        sync.Mutex
	segs      []segment // sizes are complete frames; the last one is active
	committed uint64    // end of the written log
	notify    chan struct{}
	pins      map[string]pin
	damage    []error                // found at Open and by the background scan
	aeads     map[uint64]cipher.AEAD // unwrapped data keys by segment base, for Readers

	// encrypt is set when the log has Options.Keys: every segment it
	// creates is format version 2 and every frame it writes encrypted.
	encrypt bool
	// hdrLen is the size of the header frame of the segments it creates.
	hdrLen int
	// noKey is set when the active segment is encrypted and the log has
	// no keys: Append returns ErrNoKey.
	noKey bool
	// hdrMu is held for writing while Log.Rewrap rewrites a segment's
	// header frame, and for reading by Readers reading one, so that they
	// never see half of it. rwMu serialises Log.Rewrap calls.
	hdrMu *sync.RWMutex
	rwMu  sync.Mutex

	scanStop chan struct{} // closed by Close to stop the background scan
	scanDone chan struct{} // closed when the background scan ends
}

type pin struct{ first, last uint64 }

// Open opens the log in dir, creating dir and the first segment if needed.
// A nil opts means defaults.
//
// Opened for writing, it takes a lock on dir/LOCK, scans the last segment,
// truncates a torn tail (reported by Recovery), and starts the writer
// goroutine. If the last segment holds a valid frame after an invalid one it
// returns a *CorruptionError and leaves the log untouched: run Repair.
// Of the earlier, sealed segments it reads only the header frame, and it
// checks that each segment starts where the one before it ends; what is
// wrong there does not stop appending and is reported by Damage.
// Options.ScanSealed verifies every frame of them in the background;
// Check does so at once.
func Open(dir string, opts *Options) (*Log, error) {
	o := opts.withDefaults()
	l := &Log{dir: dir, opts: o, readOnly: o.ReadOnly, pins: map[string]pin{}, done: make(chan struct{}),
		encrypt: o.Keys != nil, hdrLen: headerLen(o.Keys != nil), hdrMu: new(sync.RWMutex)}
	if o.ReadOnly {
		close(l.done)
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("wal: open %s: %w", dir, err)
		}
		return l, nil
	}
	// The log holds every prompt and response: the directory is 0700 and
	// every file 0600, and what an older version wrote is tightened.
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	if err := private.Tighten(dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	l.lock = lock
	if err := replayRewrap(dir); err != nil {
		lock.Close()
		return nil, err
	}
	if err := l.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	l.queue = make(chan *request, o.QueueLen)
	l.free = make(chan *request, min(o.QueueLen, 1024))
	l.reqLists = make(chan *reqList, 16)
	l.batch = make([]*request, 0, o.QueueLen)
	l.nextHint.Store(l.next)
	l.applyRetention(time.Now())
	go l.run()
	l.sealc, l.bgStop, l.bgDone = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go l.background()
	l.scanStop, l.scanDone = make(chan struct{}), make(chan struct{})
	if o.ScanSealed {
		go l.scanSealed(append([]segment(nil), l.segs[:len(l.segs)-1]...))
	} else {
		close(l.scanDone)
	}
	return l, nil
}

// Damage returns what is wrong with the sealed segments, in offset order
// of discovery: a *GapError for bytes missing between two segments, a
// *CorruptionError for a segment whose header frame (found at Open) or a
// later frame (found by the background scan of Options.ScanSealed) is
// invalid. Appending goes on regardless; a Reader crossing the damage
// stops with the same error. It is nil for a sound log and for a
// read-only one (use Check).
func (l *Log) Damage() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.damage...)
}

// checkSealed reads the header frame of each sealed segment and looks for
// gaps between segments.
func (l *Log) checkSealed(segs []segment) {
	for _, g := range findGaps(l.dir, segs) {
		l.damage = append(l.damage, g)
	}
	for _, s := range segs[:len(segs)-1] {
		path := l.path(s.base)
		hdr := make([]byte, headerFrameLenEnc)
		err := func() error {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			n, _ := f.ReadAt(hdr, 0)
			if n < headerFrameLen {
				return fmt.Errorf("segment is %d bytes, shorter than its header frame", n)
			}
			_, err = decodeAt(hdr[:n], s.base, 0)
			if errors.Is(err, frame.ErrShort) {
				err = fmt.Errorf("segment is %d bytes, shorter than its header frame", n)
			}
			return err
		}()
		if err != nil {
			l.damage = append(l.damage, &CorruptionError{Segment: path, Offset: s.base, Err: err})
		}
	}
}

// scanSealed verifies every frame of segs, which are sealed, and records
// what is corrupt. It reads through a Reader of a read-only view of the
// log, so it holds about one read chunk of memory, not a whole segment.
func (l *Log) scanSealed(segs []segment) {
	defer close(l.scanDone)
	view := &Log{dir: l.dir, readOnly: true, hdrMu: l.hdrMu}
	r := view.NewReader()
	defer r.Close()
	for _, s := range segs {
		select {
		case <-l.scanStop:
			return
		default:
		}
		path := l.path(s.base)
		l.mu.Lock()
		known := false
		for _, d := range l.damage {
			if ce, ok := d.(*CorruptionError); ok && ce.Segment == path {
				known = true
			}
		}
		l.mu.Unlock()
		if known {
			continue
		}
		err := r.Seek(s.base)
		if err == nil {
			end := s.base + uint64(s.size)
			for r.Next() {
				h := r.Header()
				if r.Offset()+uint64(h.Size()) >= end {
					break
				}
			}
			err = r.Err()
		}
		// Anything else (the segment removed by retention meanwhile) is
		// for Check to say.
		var ce *CorruptionError
		if errors.As(err, &ce) && ce.Segment == path {
			l.mu.Lock()
			l.damage = append(l.damage, ce)
			l.mu.Unlock()
			if l.opts.OnDamage != nil {
				l.opts.OnDamage(ce)
			}
		}
	}
}

// recover scans the last segment and opens it for appending.
func (l *Log) recover() error {
	segs, err := listSegments(l.dir)
	if err != nil {
		return fmt.Errorf("wal: list %s: %w", l.dir, err)
	}
	for i := 0; i+1 < len(segs); i++ {
		if segs[i].base+uint64(segs[i].size) > segs[i+1].base {
			return &CorruptionError{Segment: l.path(segs[i].base), Offset: segs[i+1].base, Err: errOverlap}
		}
	}
	segs, lost, err := l.recoverSeal(segs)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		if err := l.create(0, false); err != nil {
			return err
		}
		l.segs = []segment{{base: 0, size: l.pos, modTime: time.Now()}}
	} else {
		last := segs[len(segs)-1]
		path := l.path(last.base)
		data, err := readSegment(path, nil)
		if err != nil {
			return fmt.Errorf("wal: read segment %s: %w", path, err)
		}
		info := checkSegment(path, last.base, data, true)
		if info.Err != nil {
			return info.Err
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("wal: open segment %s: %w", path, err)
		}
		l.f = f
		if info.Torn || len(data) == 0 {
			l.recovery = &Recovery{Segment: path, Offset: last.base + uint64(info.ValidEnd), Dropped: info.Size - info.ValidEnd, Err: info.TornErr}
			if err := f.Truncate(info.ValidEnd); err != nil {
				f.Close()
				return fmt.Errorf("wal: truncate torn tail of %s at offset %d: %w", path, l.recovery.Offset, err)
			}
			if info.ValidEnd == 0 {
				hdr, aead, err := l.newHeader(last.base)
				if err != nil {
					f.Close()
					return err
				}
				if _, err := f.WriteAt(hdr, 0); err != nil {
					f.Close()
					return fmt.Errorf("wal: write header of %s: %w", path, err)
				}
				info.ValidEnd = int64(len(hdr))
				data = append(data[:0], hdr...)
				l.aead = aead
			}
			if err := fdatasync(f); err != nil {
				f.Close()
				return fmt.Errorf("wal: sync %s: %w", path, err)
			}
		}
		if lost != nil {
			if l.recovery == nil {
				l.recovery = &Recovery{Segment: path, Offset: last.base + uint64(info.ValidEnd), Err: lost.err}
			} else {
				l.recovery.Err = fmt.Errorf("%w; %w", lost.err, l.recovery.Err)
			}
			l.recovery.Dropped += lost.dropped
		}
		l.pos = info.ValidEnd
		last.size = info.ValidEnd
		segs[len(segs)-1] = last
		l.segs = segs
		l.checkSealed(segs)
		if err := l.activeKey(path, last.base, data[:info.ValidEnd]); err != nil {
			f.Close()
			return err
		}
	}
	last := l.segs[len(l.segs)-1]
	l.segBase = last.base
	l.next = last.base + uint64(last.size)
	l.committed = last.base + uint64(l.pos)
	return nil
}

// activeKey sets up encryption for the active segment at base, whose
// valid bytes are data. A version 2 segment's data key is unwrapped (or,
// without keys, appending is refused with ErrNoKey). A version 1 segment
// of a log that has keys is sealed and a version 2 segment started after
// it, so that no frame is written in the clear once keys are given.
func (l *Log) activeKey(path string, base uint64, data []byte) error {
	if l.aead != nil {
		return nil // a header just written
	}
	f, err := decodeAt(data, base, 0)
	if err != nil {
		return &CorruptionError{Segment: path, Offset: base, Err: err}
	}
	v, k, err := parseHeaderFrame(&f)
	if err != nil {
		return &CorruptionError{Segment: path, Offset: base, Err: err}
	}
	switch {
	case v == VersionEncrypted && l.encrypt:
		a, err := k.unwrap(l.opts.Keys)
		if err != nil {
			return &KeyError{Segment: path, Gen: k.gen, Err: err}
		}
		l.aead = a
		l.cacheAEAD(base, a)
	case v == VersionEncrypted:
		l.noKey = true
	case l.encrypt:
		if err := fdatasync(l.f); err != nil {
			return fmt.Errorf("wal: sync %s: %w", path, err)
		}
		if err := l.f.Close(); err != nil {
			return fmt.Errorf("wal: close %s: %w", path, err)
		}
		l.f = nil
		next := base + uint64(len(data))
		if err := l.create(next, false); err != nil {
			return err
		}
		l.segs = append(l.segs, segment{base: next, size: l.pos, modTime: time.Now()})
	}
	return nil
}

// newHeader returns the header frame of a new segment at base and, for a
// log that encrypts, the AEAD of the segment's fresh data key.
func (l *Log) newHeader(base uint64) ([]byte, cipher.AEAD, error) {
	if !l.encrypt {
		return appendHeaderFrame(nil, base, time.Now()), nil, nil
	}
	return newKeyHeader(nil, base, time.Now(), l.opts.Keys)
}

// cacheAEAD remembers the unwrapped data key of the segment at base for
// Readers. The cache is dropped when it grows large: an unwrap costs
// about a microsecond.
func (l *Log) cacheAEAD(base uint64, a cipher.AEAD) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aeads == nil || len(l.aeads) >= 1024 {
		l.aeads = map[uint64]cipher.AEAD{}
	}
	l.aeads[base] = a
}

// cachedAEAD returns the cached data key of the segment at base, or nil.
func (l *Log) cachedAEAD(base uint64) cipher.AEAD {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.aeads[base]
}

// unsealed is what recoverSeal dropped.
type unsealed struct {
	dropped int64 // bytes of the segments removed and missing before them (not a torn tail)
	err     error
}

// recoverSeal checks the segments marked as not yet sealed (see
// sealExt). A marked segment that holds every byte up to the next
// segment is whole: its marker goes. One that does not lost bytes in a
// crash before its background sync ended, and every later segment was
// started after those bytes were written: the later segments are removed,
// so the log ends in the marked segment, whose torn tail Open then
// truncates, and the log stays a prefix of what was written. It returns
// the segments left.
func (l *Log) recoverSeal(segs []segment) ([]segment, *unsealed, error) {
	marks, err := sealMarkers(l.dir)
	if err != nil || len(marks) == 0 {
		return segs, nil, err
	}
	var lost *unsealed
	for _, base := range marks {
		i := slices.IndexFunc(segs, func(s segment) bool { return s.base == base })
		if i >= 0 && i+1 < len(segs) {
			path := l.path(base)
			data, err := readSegment(path, nil)
			if err != nil {
				return nil, nil, fmt.Errorf("wal: read segment %s: %w", path, err)
			}
			info := checkSegment(path, base, data, true)
			if info.Err != nil {
				return nil, nil, info.Err
			}
			// A gap Repair accepted since (a hole record) is no
			// longer the seal's to settle.
			if end := base + uint64(info.ValidEnd); end != segs[i+1].base && !covered(readHoles(l.dir), end, segs[i+1].base) {
				// Bytes past the file's end; a torn tail inside it
				// is counted by Open.
				lost = &unsealed{dropped: max(0, int64(segs[i+1].base-base)-int64(len(data)))}
				var names []string
				for _, s := range segs[i+1:] {
					if err := os.Remove(l.path(s.base)); err != nil {
						return nil, nil, fmt.Errorf("wal: remove segment %s started before %s was synced: %w", l.path(s.base), path, err)
					}
					lost.dropped += s.size
					names = append(names, segName(s.base))
				}
				lost.err = fmt.Errorf("segment %s lost its bytes from offset %d in a crash before it was synced; removed the segments started after them: %s", path, end, strings.Join(names, ", "))
				segs = segs[:i+1]
				segs[i].size = int64(len(data))
			}
		}
		if err := os.Remove(sealMarkerPath(l.dir, base)); err != nil && !os.IsNotExist(err) {
			return nil, nil, fmt.Errorf("wal: %w", err)
		}
	}
	if err := syncDir(l.dir); err != nil {
		return nil, nil, err
	}
	return segs, lost, nil
}

// create creates the segment at base, writes its header, syncs it and the
// directory unless defer is set (the caller then does), and makes it the
// writer's file.
func (l *Log) create(base uint64, deferSync bool) error {
	path := l.path(base)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, private.FileMode)
	if err != nil {
		return fmt.Errorf("wal: create segment %s: %w", path, err)
	}
	hdr, aead, err := l.newHeader(base)
	if err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := f.Write(hdr); err != nil {
		f.Close()
		return fmt.Errorf("wal: write header of %s: %w", path, err)
	}
	if !deferSync {
		if err := fdatasync(f); err != nil {
			f.Close()
			return fmt.Errorf("wal: sync %s: %w", path, err)
		}
		if err := syncDir(l.dir); err != nil {
			f.Close()
			return err
		}
	}
	l.f, l.pos, l.aead = f, int64(len(hdr)), aead
	if aead != nil {
		l.cacheAEAD(base, aead)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: sync directory %s: %w", dir, err)
	}
	return nil
}

func (l *Log) path(base uint64) string { return filepath.Join(l.dir, segName(base)) }

// Dir returns the directory of the log.
func (l *Log) Dir() string { return l.dir }

// Keys returns the keys the log was opened with: nil for a log that
// writes in the clear.
func (l *Log) Keys() *crypt.Keys { return l.opts.Keys }

// Compresses reports whether the log stores payloads as snappy blocks
// where that is shorter (the default), and so takes Snappy records.
func (l *Log) Compresses() bool { return !l.opts.NoCompression }

// SyncPolicy reports when the log syncs what it writes.
func (l *Log) SyncPolicy() SyncPolicy { return l.opts.Sync }

// Recovery returns what Open truncated, or nil if the log was clean.
func (l *Log) Recovery() *Recovery { return l.recovery }

// Append writes r as one frame and returns the frame's offset once the
// frame is written (and synced, under SyncAlways). Appends are ordered:
// when Append returns, every earlier Append has been written too. It is
// safe for concurrent use; concurrent appends are written together. After a
// failed write every Append returns the same error. Append allocates
// nothing in the steady state.
//
// When no other append is queued and nothing is being written, Append
// writes (and syncs) its frame from the calling goroutine: a lone
// appender costs a write, not a handoff to the writer goroutine and back.
func (l *Log) Append(r Record) (uint64, error) {
	req, err := l.encode(r, l.nextHint.Load())
	if err != nil {
		return 0, err
	}
	l.amu.Lock()
	if l.closed {
		l.amu.Unlock()
		l.put(req)
		return 0, ErrClosed
	}
	off := l.assign(req)
	if l.queued.Load() == 0 && l.wmu.TryLock() {
		// Every earlier frame is written and wmu keeps any later one
		// from being written first: write this one here.
		l.amu.Unlock()
		l.one[0] = req
		err = l.write(l.one[:])
		l.one[0] = nil
		l.wmu.Unlock()
	} else {
		l.queued.Add(1)
		l.queue <- req
		l.amu.Unlock()
		err = <-req.done
	}
	l.put(req)
	if err != nil {
		return 0, err
	}
	return off, nil
}

// AppendBatch appends recs in order, as many calls to Append would, but
// queues them all before it waits, so the writer takes them as one group:
// one handoff, one write, one sync. It returns the offset of the first
// frame. Frames are written in order, and when AppendBatch returns nil
// all of them are written; on an error, a prefix of recs may have been.
// Payloads may be reused once it returns. As Append, it writes the group
// from the calling goroutine when nothing else is queued or being written.
func (l *Log) AppendBatch(recs []Record) (uint64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	var list *reqList
	select {
	case list = <-l.reqLists:
	default:
		list = &reqList{}
	}
	reqs := list.reqs[:0]
	defer func() {
		for _, req := range reqs {
			l.put(req)
		}
		clear(reqs)
		list.reqs = reqs[:0]
		select {
		case l.reqLists <- list:
		default:
		}
	}()
	hint := l.nextHint.Load()
	for _, r := range recs {
		req, err := l.encode(r, hint)
		if err != nil {
			return 0, err
		}
		hint += uint64(len(req.frame))
		reqs = append(reqs, req)
	}
	l.amu.Lock()
	if l.closed {
		l.amu.Unlock()
		return 0, ErrClosed
	}
	var first uint64
	for i, req := range reqs {
		off := l.assign(req)
		if i == 0 {
			first = off
		}
	}
	var err error
	if l.queued.Load() == 0 && l.wmu.TryLock() {
		l.amu.Unlock()
		err = l.write(reqs)
		l.wmu.Unlock()
	} else {
		l.queued.Add(int64(len(reqs)))
		for _, req := range reqs {
			l.queue <- req
		}
		l.amu.Unlock()
		for _, req := range reqs {
			if e := <-req.done; e != nil && err == nil {
				err = e
			}
		}
	}
	if err != nil {
		return 0, err
	}
	return first, nil
}

// reqList holds the requests of one AppendBatch; kept on a free list (not
// a sync.Pool, which drops items under the race detector) so a batch
// allocates nothing in the steady state.
type reqList struct{ reqs []*request }

// encode checks r and encodes it as a frame at offset hint, the offset it
// will likely get, in a request.
func (l *Log) encode(r Record, hint uint64) (*request, error) {
	if l.readOnly {
		return nil, ErrReadOnly
	}
	if l.noKey {
		return nil, ErrNoKey
	}
	if len(r.Payload) > frame.MaxPayload || r.Snappy && r.RawLen > frame.MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes (the limit is %d; split bodies into chunk frames)", ErrTooLarge, max(len(r.Payload), r.RawLen), frame.MaxPayload)
	}
	if r.Snappy {
		if l.opts.NoCompression {
			return nil, errors.New("wal: a compressed record for a log that stores frames uncompressed")
		}
		if n, err := snappy.DecodedLen(r.Payload); err != nil || n != r.RawLen || len(r.Payload) == 0 || len(r.Payload) >= r.RawLen {
			return nil, fmt.Errorf("wal: a compressed record of %d bytes is not a snappy block of %d shorter than them", len(r.Payload), r.RawLen)
		}
	}
	if !r.Kind.Valid() || r.Kind == frame.KindSegmentHeader {
		return nil, fmt.Errorf("wal: cannot append a frame of kind %v", r.Kind)
	}
	if p := l.failed.Load(); p != nil {
		return nil, *p
	}
	if r.Time == 0 {
		r.Time = time.Now().UnixNano()
	}
	h := frame.Header{Offset: hint, Exchange: r.Exchange, Time: r.Time, Kind: r.Kind}
	if r.Last {
		h.Flags = frame.FlagLast
	}
	req := l.get()
	switch {
	case l.encrypt && r.Snappy:
		req.frame = frame.AppendSnappyEncrypted(req.frame[:0], h, r.RawLen, r.Payload)
	case l.encrypt:
		// Laid out with its payload in the clear and no CRC: write
		// encrypts it once its offset and segment are final.
		req.frame = frame.AppendEncrypted(req.frame[:0], h, r.Payload, !l.opts.NoCompression)
	case r.Snappy:
		req.frame = frame.AppendSnappy(req.frame[:0], h, r.RawLen, r.Payload)
	default:
		req.frame = frame.AppendFrame(req.frame[:0], h, r.Payload, !l.opts.NoCompression)
	}
	return req, nil
}

// assign gives the encoded req its offset, starting a new segment first
// when the frame would take the active one past SegmentSize, and returns
// the offset. The caller holds amu and queues or writes req before it
// releases amu.
func (l *Log) assign(req *request) uint64 {
	n := uint64(len(req.frame))
	req.rotate = false
	hl := uint64(l.hdrLen)
	if l.next-l.segBase+n > uint64(l.opts.SegmentSize) && l.next > l.segBase+hl {
		req.rotate, req.segBase = true, l.next
		l.segBase = l.next
		l.next += hl
	}
	off := l.next
	l.next += n
	l.nextHint.Store(l.next)
	switch {
	case l.encrypt:
		// The CRC is computed when write encrypts the frame.
		binary.LittleEndian.PutUint64(req.frame[8:], off)
	case binary.LittleEndian.Uint64(req.frame[8:]) != off:
		frame.SetOffset(req.frame, off)
	}
	return off
}

func (l *Log) get() *request {
	select {
	case req := <-l.free:
		return req
	default:
		return &request{done: make(chan error, 1)}
	}
}

func (l *Log) put(req *request) {
	if cap(req.frame) > 96<<10 {
		req.frame = nil // keep the free list's memory small
	}
	select {
	case l.free <- req:
	default:
	}
}

// Sync flushes everything appended so far to stable storage.
func (l *Log) Sync() error {
	if l.readOnly {
		return ErrReadOnly
	}
	if p := l.failed.Load(); p != nil {
		return *p
	}
	req := l.get()
	req.frame = req.frame[:0]
	req.rotate = false
	l.amu.Lock()
	if l.closed {
		l.amu.Unlock()
		l.put(req)
		return ErrClosed
	}
	var err error
	if l.queued.Load() == 0 && l.wmu.TryLock() {
		// Every appended frame is written: sync here.
		l.amu.Unlock()
		l.one[0] = req
		err = l.write(l.one[:])
		l.one[0] = nil
		l.wmu.Unlock()
	} else {
		l.queue <- req
		l.amu.Unlock()
		err = <-req.done
	}
	l.put(req)
	return err
}

// run is the writer goroutine: it drains the queue, writes each group with
// one write, syncs per policy, then acknowledges.
func (l *Log) run() {
	defer close(l.done)
	for {
		req, ok := <-l.queue
		if !ok {
			l.finish()
			return
		}
		// An appender may be writing its own frames: wait for it, and
		// take what queued up meanwhile into this group.
		l.wmu.Lock()
		batch := append(l.batch[:0], req)
		size := len(req.frame)
		open := true
	drain:
		for size < maxGroupBytes && len(batch) < cap(l.batch) {
			select {
			case req, ok := <-l.queue:
				if !ok {
					open = false
					break drain
				}
				batch = append(batch, req)
				size += len(req.frame)
			default:
				break drain
			}
		}
		l.commit(batch)
		clear(batch)
		if !open {
			l.finish()
			return
		}
	}
}

// background seals the segments rotation leaves unsealed and, under
// SyncInterval, syncs the active segment every SyncInterval if it was
// written since its last sync. It holds wmu only to look, so appends go
// on during its syncs.
func (l *Log) background() {
	defer close(l.bgDone)
	var tick <-chan time.Time
	if l.opts.Sync == SyncInterval {
		t := time.NewTicker(l.opts.SyncInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-l.bgStop:
			return
		case <-l.sealc:
			l.smu.Lock()
			l.sealLocked()
			l.smu.Unlock()
			continue
		case <-tick:
		}
		l.wmu.Lock()
		if !l.dirty || l.f == nil || l.failed.Load() != nil {
			l.wmu.Unlock()
			continue
		}
		l.smu.Lock()
		f := l.f
		l.dirty = false
		l.tmu.Lock()
		l.wmu.Unlock()
		err := l.sealLocked()
		l.smu.Unlock()
		// A rotation during this sync leaves f to be sealed; closing it
		// waits for the sync (os.File counts its users).
		if err == nil {
			if err = fdatasync(f); err != nil {
				l.fail(fmt.Errorf("wal: sync segment %s: %w", f.Name(), err))
			}
		}
		l.tmu.Unlock()
	}
}

// fail makes err sticky.
func (l *Log) fail(err error) {
	l.failed.CompareAndSwap(nil, &err)
}

// commit writes one group, releases wmu (held by the caller) and
// acknowledges the group.
func (l *Log) commit(batch []*request) {
	var resume *request
	if last := batch[len(batch)-1]; last.resume {
		// Resume holds amu until it is answered, so its request is
		// always the last of its group.
		resume, batch = last, batch[:len(batch)-1]
	}
	var err, rerr error
	if len(batch) > 0 {
		err = l.write(batch)
		var frames int64
		for _, req := range batch {
			if len(req.frame) > 0 {
				frames++
			}
		}
		l.queued.Add(-frames)
	}
	if resume != nil {
		rerr = l.resume()
	}
	l.wmu.Unlock()
	for _, req := range batch {
		req.done <- err
	}
	if resume != nil {
		resume.done <- rerr
	}
}

// Resume clears a sticky write error once the log can be written again
// (space came back on a full disk): it checks that the directory takes a
// write, cuts the active segment back to its last whole frame, and lets
// appends go on from there. It returns nil at once when nothing failed,
// and the write error again while the fault lasts. Appends that failed
// stay failed; their offsets are given out again.
func (l *Log) Resume() error {
	if l.readOnly {
		return ErrReadOnly
	}
	if l.failed.Load() == nil {
		return nil
	}
	l.amu.Lock()
	defer l.amu.Unlock()
	if l.closed {
		return ErrClosed
	}
	req := l.get()
	req.frame, req.rotate, req.resume = req.frame[:0], false, true
	l.queue <- req
	err := <-req.done
	req.resume = false
	l.put(req)
	if err != nil {
		return err
	}
	// No append is queued behind the request (amu is held): offsets
	// continue from the end of what was written.
	l.mu.Lock()
	last := l.segs[len(l.segs)-1]
	l.mu.Unlock()
	l.segBase, l.next = last.base, last.base+uint64(last.size)
	l.nextHint.Store(l.next)
	return nil
}

// resumeProbe is how many bytes Resume writes (and removes) to see that
// the directory takes writes again.
const resumeProbe = 1 << 20

// resume runs on the writer goroutine for Resume.
func (l *Log) resume() error {
	p := l.failed.Load()
	if p == nil {
		return nil
	}
	probe := filepath.Join(l.dir, ".probe")
	if err := l.probe(probe); err != nil {
		os.Remove(probe)
		return fmt.Errorf("%w (still failing: %v)", *p, err)
	}
	os.Remove(probe)
	l.mu.Lock()
	last := l.segs[len(l.segs)-1]
	l.mu.Unlock()
	path := l.path(last.base)
	if l.f == nil {
		// A rotation failed after it closed the old segment: remove the
		// new one's remains and append to the old one again.
		if s := l.path(l.segBase); s != path {
			os.Remove(s)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("%w (reopen %s: %v)", *p, path, err)
		}
		l.f = f
	}
	// Whatever a failed write left after the last whole frame goes.
	l.pos = last.size
	if err := l.f.Truncate(l.pos); err != nil {
		return fmt.Errorf("%w (truncate %s: %v)", *p, path, err)
	}
	if err := fdatasync(l.f); err != nil {
		return fmt.Errorf("%w (sync %s: %v)", *p, path, err)
	}
	l.dirty = false
	l.failed.Store(nil)
	return nil
}

// probe writes resumeProbe bytes to path and syncs them.
func (l *Log) probe(path string) error {
	if err := l.fault(path, resumeProbe); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, resumeProbe))
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// fault asks Options.FaultWrite about a write of n bytes to path.
func (l *Log) fault(path string, n int) error {
	if l.opts.FaultWrite == nil {
		return nil
	}
	return l.opts.FaultWrite(path, n)
}

// Failed returns the sticky write error, or nil while the log writes.
func (l *Log) Failed() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Log) write(batch []*request) error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	wantSync := l.opts.Sync == SyncAlways
	buf := l.buf[:0]
	var single []byte
	for _, req := range batch {
		if req.rotate {
			if err := l.flush(buf, single); err != nil {
				return err
			}
			buf, single = buf[:0], nil
			if err := l.rotate(req.segBase); err != nil {
				l.fail(err)
				return err
			}
		}
		if len(req.frame) == 0 {
			wantSync = true
			continue
		}
		if l.encrypt {
			// Here, after any rotation, the frame's offset and segment
			// (its data key) are final. A random nonce stays safe when
			// a torn tail is truncated and appending resumes under the
			// same key.
			f := req.frame
			nonce := f[frame.HeaderLen : frame.HeaderLen+frame.NonceLen]
			if _, err := rand.Read(nonce); err != nil {
				err = fmt.Errorf("wal: random nonce: %w", err)
				l.fail(err)
				return err
			}
			frame.Encrypt(f, l.aead, nonce)
		}
		if len(batch) == 1 {
			single = req.frame // write it from the request: no copy
			continue
		}
		buf = append(buf, req.frame...)
		if len(buf) >= maxGroupBytes {
			if err := l.flush(buf, nil); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if err := l.flush(buf, single); err != nil {
		return err
	}
	l.buf = buf[:0]
	if cap(l.buf) > 2*maxGroupBytes {
		l.buf = nil
	}
	if wantSync {
		return l.sync()
	}
	return nil
}

// sync syncs the active segment if it was written since its last sync.
// It takes smu: a periodic sync (see tick) under way may be what made
// dirty false, and it must have ended for the writes to be synced.
func (l *Log) sync() error {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.tmu.Lock()
	defer l.tmu.Unlock()
	if p := l.failed.Load(); p != nil {
		return *p
	}
	if err := l.sealLocked(); err != nil {
		return err
	}
	if !l.dirty {
		return nil
	}
	err := l.fault(l.f.Name(), 0)
	if err == nil {
		err = fdatasync(l.f)
	}
	if err != nil {
		err = fmt.Errorf("wal: sync segment %s: %w", l.f.Name(), err)
		l.fail(err)
		return err
	}
	l.dirty = false
	return nil
}

// flush writes buf (or single) at the end of the active segment and
// publishes the new end to readers.
func (l *Log) flush(buf, single []byte) error {
	if single != nil {
		buf = single
	}
	if len(buf) == 0 {
		return nil
	}
	err := l.fault(l.f.Name(), len(buf))
	if err == nil {
		_, err = l.f.WriteAt(buf, l.pos)
	}
	if err != nil {
		l.mu.Lock()
		base := l.segs[len(l.segs)-1].base
		l.mu.Unlock()
		err = fmt.Errorf("wal: write segment %s at offset %d: %w", l.f.Name(), base+uint64(l.pos), err)
		l.fail(err)
		return err
	}
	l.pos += int64(len(buf))
	l.dirty = true
	l.mu.Lock()
	last := &l.segs[len(l.segs)-1]
	last.size = l.pos
	l.committed = last.base + uint64(l.pos)
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
	l.mu.Unlock()
	return nil
}

// rotate seals the active segment (sync, close) and creates the next one.
func (l *Log) rotate(base uint64) error {
	// segs is shared with retention run from other goroutines
	// (Expire): read it under mu.
	l.mu.Lock()
	old, oldBase := l.f, l.segs[len(l.segs)-1].base
	l.mu.Unlock()
	l.smu.Lock()
	// At most one segment is left unsealed: the one before the active.
	err := l.sealLocked()
	async := err == nil && l.opts.Sync != SyncAlways
	if err == nil && async {
		// Under SyncAlways the old segment holds nothing unsynced and
		// the next one must be on disk before an append to it returns.
		// Otherwise the sync and close of the old segment, and the
		// sync of the directory holding the next one, are left to the
		// background (sealLocked): a sync there waits for the disk to
		// take every byte written before it, which appends need not.
		// A marker, created before the next segment, tells a recovery
		// after a crash that the old one may have lost bytes the next
		// one was started after (see recoverSeal).
		err = writeSealMarker(l.dir, oldBase)
		async = err == nil
	}
	if err == nil && !async {
		if err = fdatasync(old); err != nil {
			err = fmt.Errorf("wal: sync segment %s: %w", old.Name(), err)
		}
	}
	if err == nil && !async {
		if err = old.Close(); err != nil {
			err = fmt.Errorf("wal: close segment %s: %w", old.Name(), err)
		}
	}
	if err == nil {
		l.f, l.dirty = nil, false
	}
	l.smu.Unlock()
	if err != nil {
		return err
	}
	if err := l.create(base, async); err != nil {
		// Seal the old segment here, so that Resume finds it closed and
		// whole.
		l.smu.Lock()
		if async {
			l.sealing, l.sealBase = old, oldBase
			l.sealLocked()
		}
		l.smu.Unlock()
		return err
	}
	if async {
		l.smu.Lock()
		l.sealing, l.sealBase = old, oldBase
		l.smu.Unlock()
		select {
		case l.sealc <- struct{}{}:
		default:
		}
	}
	now := time.Now()
	l.mu.Lock()
	l.segs[len(l.segs)-1].modTime = now
	l.segs = append(l.segs, segment{base: base, size: l.pos, modTime: now})
	l.committed = base + uint64(l.pos)
	if l.notify != nil {
		close(l.notify)
		l.notify = nil
	}
	l.mu.Unlock()
	l.applyRetention(now)
	return nil
}

// sealLocked syncs and closes the segment a rotation left unsealed, if
// any, syncs the directory (holding the segment after it), and removes
// its marker. The caller holds smu. A failure is sticky: bytes of the log
// may be lost.
func (l *Log) sealLocked() error {
	f := l.sealing
	if f == nil {
		return nil
	}
	l.sealing = nil
	err := fdatasync(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = fmt.Errorf("wal: sync segment %s: %w", f.Name(), err)
		l.fail(err)
		return err
	}
	if err := syncDir(l.dir); err != nil {
		l.fail(err)
		return err
	}
	// The removal needs no sync: a marker that outlives a crash finds
	// its segment whole.
	os.Remove(sealMarkerPath(l.dir, l.sealBase))
	return nil
}

// finish seals, syncs and closes the active segment when the queue is
// closed.
func (l *Log) finish() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.smu.Lock()
	defer l.smu.Unlock()
	l.tmu.Lock()
	defer l.tmu.Unlock()
	var errs []error
	if l.failed.Load() == nil {
		if err := l.sealLocked(); err != nil {
			errs = append(errs, err)
		}
	} else if l.sealing != nil {
		l.sealing.Close() // its marker stays for the next Open
		l.sealing = nil
	}
	if l.f == nil {
		l.wclosed = errors.Join(errs...)
		return
	}
	defer func() { l.f = nil }()
	if l.dirty && l.failed.Load() == nil {
		if err := fdatasync(l.f); err != nil {
			errs = append(errs, fmt.Errorf("wal: sync segment %s: %w", l.f.Name(), err))
		}
	}
	if err := l.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("wal: close segment %s: %w", l.f.Name(), err))
	}
	l.wclosed = errors.Join(errs...)
}

// Close waits for queued appends, syncs and closes the log. Appends that
// race with Close either complete or return ErrClosed. Close Readers first
// if they follow the tail: their Wait returns ErrClosed. Close is safe to
// call more than once; later calls return nil.
func (l *Log) Close() error {
	if l.readOnly {
		return nil
	}
	l.amu.Lock()
	if l.closed {
		l.amu.Unlock()
		return nil
	}
	l.closed = true
	close(l.queue)
	l.amu.Unlock()
	close(l.scanStop)
	<-l.scanDone
	close(l.bgStop)
	<-l.bgDone
	<-l.done
	err := l.wclosed
	if l.lock != nil {
		if cerr := l.lock.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// End returns the offset just after the last frame written so far (for a
// read-only log: as found on disk now).
func (l *Log) End() (uint64, error) {
	segs, err := l.view()
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	last := segs[len(segs)-1]
	return last.base + uint64(last.size), nil
}

// First returns the offset of the first retained frame.
func (l *Log) First() (uint64, error) {
	segs, err := l.view()
	if err != nil || len(segs) == 0 {
		return 0, err
	}
	return segs[0].base, nil
}

// view returns a copy of the segment list. For a read-only log it lists
// the directory; sizes are file sizes.
func (l *Log) view() ([]segment, error) {
	if l.readOnly {
		segs, err := listSegments(l.dir)
		if err != nil {
			return nil, fmt.Errorf("wal: list %s: %w", l.dir, err)
		}
		return segs, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]segment(nil), l.segs...), nil
}

// waitChan returns a channel closed when the log grows past end, or nil if
// it already has.
func (l *Log) waitChan(end uint64) chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.committed > end {
		return nil
	}
	if l.notify == nil {
		l.notify = make(chan struct{})
	}
	return l.notify
}

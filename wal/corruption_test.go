package wal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

// TestCorruption is the named corruption table: each case damages the last
// segment of a log of ten frames and states exactly what Open must do.
func TestCorruption(t *testing.T) {
	const n = 10
	type want struct {
		corruptAt int   // frame index of a CorruptionError, or -1
		reason    error // wrapped reason, when checked
		keep      int   // frames readable after Open (or after Repair)
		truncAt   int   // frame index where the log now ends (n = after the last)
		dropped   int64 // bytes truncated, -1 to skip the check
		empty     bool  // the recovery is an empty segment getting its header
	}
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, offs []uint64, end uint64, dir string)
		want   want
	}{
		{"torn tail", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			truncate(t, path, rel(end-5, offs))
		}, want{corruptAt: -1, keep: n - 1, truncAt: n - 1, dropped: -1}},
		{"truncated header", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			truncate(t, path, rel(offs[n-1]+20, offs))
		}, want{corruptAt: -1, reason: frame.ErrShort, keep: n - 1, truncAt: n - 1, dropped: 20}},
		{"zeroed tail", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			appendBytes(t, path, make([]byte, 4096))
		}, want{corruptAt: -1, reason: frame.ErrInvalid, keep: n, truncAt: n, dropped: 4096}},
		{"garbage after the end", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			appendBytes(t, path, []byte(strings.Repeat("not a frame at all ", 40)))
		}, want{corruptAt: -1, keep: n, truncAt: n, dropped: 760}},
		{"bad crc in the last frame", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			flip(t, path, rel(end-1, offs))
		}, want{corruptAt: -1, reason: frame.ErrChecksum, keep: n - 1, truncAt: n - 1, dropped: -1}},
		{"bad crc mid-log", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			flip(t, path, rel(offs[3]+frame.HeaderLen+2, offs))
		}, want{corruptAt: 3, reason: frame.ErrChecksum, keep: 3}},
		{"bad length mid-log", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			b := read(t, path)
			p := rel(offs[3], offs)
			binary.LittleEndian.PutUint32(b[p+4:], binary.LittleEndian.Uint32(b[p+4:])+7)
			write(t, path, b)
		}, want{corruptAt: 3, keep: 3}},
		{"offset mismatch mid-log", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			b := read(t, path)
			p := rel(offs[3], offs)
			f, err := frame.Decode(b[p:])
			if err != nil {
				t.Fatal(err)
			}
			frame.SetOffset(b[p:p+int64(f.Size())], offs[3]+4096) // a valid frame, in the wrong place
			write(t, path, b)
		}, want{corruptAt: 3, reason: errOffsetMismatch, keep: 3}},
		{"zeroed frame mid-log", func(t *testing.T, path string, offs []uint64, end uint64, _ string) {
			b := read(t, path)
			clear(b[rel(offs[3], offs):rel(offs[4], offs)])
			write(t, path, b)
		}, want{corruptAt: 3, reason: frame.ErrInvalid, keep: 3}},
		{"an empty segment file", func(t *testing.T, path string, offs []uint64, end uint64, dir string) {
			write(t, filepath.Join(dir, segName(end)), nil)
		}, want{corruptAt: -1, keep: n, truncAt: n, dropped: 0, empty: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, nil)
			offs := appendN(t, l, 0, n)
			end, _ := l.End()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, segName(0))
			tt.damage(t, path, offs, end, dir)

			l, err := Open(dir, nil)
			if tt.want.corruptAt >= 0 {
				var ce *CorruptionError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorruption) {
					t.Fatalf("Open = %v, want a CorruptionError", err)
				}
				if ce.Segment != path || ce.Offset != offs[tt.want.corruptAt] {
					t.Fatalf("CorruptionError{%s, %d}, want {%s, %d}", ce.Segment, ce.Offset, path, offs[tt.want.corruptAt])
				}
				if tt.want.reason != nil && !errors.Is(err, tt.want.reason) {
					t.Errorf("reason %v, want %v", ce.Err, tt.want.reason)
				}
				if msg := err.Error(); !strings.Contains(msg, "bbengine wal repair") || !strings.Contains(msg, path) {
					t.Errorf("message %q does not name the segment and the fix", msg)
				}
				infos, err := Check(dir)
				if err != nil || len(infos) != 1 || infos[0].Err == nil {
					t.Fatalf("Check = %+v, %v; want the corruption", infos, err)
				}
				fixed, err := Repair(dir)
				if err != nil || len(fixed) != 1 || fixed[0].Offset != offs[tt.want.corruptAt] || fixed[0].Copy == "" {
					t.Fatalf("Repair = %+v, %v", fixed, err)
				}
				if _, err := os.Stat(fixed[0].Copy); err != nil {
					t.Fatalf("damaged copy: %v", err)
				}
				if l, err = Open(dir, nil); err != nil {
					t.Fatalf("Open after Repair: %v", err)
				}
			} else {
				if err != nil {
					t.Fatalf("Open = %v, want recovery", err)
				}
				rec := l.Recovery()
				if rec == nil {
					t.Fatal("Recovery() = nil, want a report")
				}
				wantOff := end
				wantSeg := path
				if tt.want.empty {
					wantOff, wantSeg = end, filepath.Join(dir, segName(end))
					if rec.Err != nil {
						t.Errorf("empty segment reported reason %v", rec.Err)
					}
				} else if tt.want.truncAt < n {
					wantOff = offs[tt.want.truncAt]
				}
				if rec.Offset != wantOff || rec.Segment != wantSeg {
					t.Errorf("Recovery = %+v, want offset %d in %s", rec, wantOff, wantSeg)
				}
				if tt.want.dropped >= 0 && rec.Dropped != tt.want.dropped {
					t.Errorf("Dropped = %d, want %d", rec.Dropped, tt.want.dropped)
				}
				if tt.want.reason != nil && !errors.Is(rec.Err, tt.want.reason) {
					t.Errorf("reason %v, want %v", rec.Err, tt.want.reason)
				}
			}
			defer l.Close()
			// The log is writable, and reads back exactly the kept frames
			// and the new one.
			off, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: 100, Payload: payloadFor(100)})
			if err != nil {
				t.Fatal(err)
			}
			got := readAll(t, l)
			if len(got) != tt.want.keep+1 || got[len(got)-1] != 100 {
				t.Fatalf("read %v, want %d kept frames then 100", got, tt.want.keep)
			}
			r := l.NewReader()
			defer r.Close()
			if err := r.Seek(off); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCorruptSealedSegment: a damaged segment that is not the last is
// reported by Check and by a Reader, and Repair leaves a gap readers skip.
func TestCorruptSealedSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 1024})
	offs := appendN(t, l, 0, 60)
	l.Close()
	segs, _ := listSegments(dir)
	if len(segs) < 3 {
		t.Fatal("want several segments")
	}
	victim := segs[1]
	path := filepath.Join(dir, segName(victim.base))
	var k int
	for k = range offs {
		if offs[k] > victim.base+100 {
			break
		}
	}
	flip(t, path, int64(offs[k]-victim.base)+frame.HeaderLen)

	l = mustOpen(t, dir, nil) // only the last segment is scanned on open
	r := l.NewReader()
	for r.Next() {
	}
	var ce *CorruptionError
	if !errors.As(r.Err(), &ce) || ce.Offset != offs[k] || ce.Segment != path {
		t.Fatalf("Reader.Err = %v, want corruption at %d in %s", r.Err(), offs[k], path)
	}
	r.Close()
	l.Close()

	if _, err := Repair(dir); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, nil)
	defer l.Close()
	got := readAll(t, l)
	if len(got) >= 60 || got[len(got)-1] != 59 {
		t.Fatalf("after repair read %d frames ending with %d", len(got), got[len(got)-1])
	}
	r = l.NewReader()
	defer r.Close()
	var be *BoundaryError
	if err := r.Seek(offs[k]); !errors.As(err, &be) || be.Next != segs[2].base {
		t.Fatalf("Seek into the gap = %v, want next boundary %d", err, segs[2].base)
	}
}

func rel(off uint64, _ []uint64) int64 { return int64(off) } // the first segment has base 0

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

func appendBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	write(t, path, append(read(t, path), b...))
}

func flip(t *testing.T, path string, at int64) {
	t.Helper()
	b := read(t, path)
	b[at] ^= 0x40
	write(t, path, b)
}

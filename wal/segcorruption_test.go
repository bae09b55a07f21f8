package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

// TestCorruptionSegments is the named corruption table for damage outside
// the last segment: each row damages the sealed segment segs[1] of a log
// of several segments and states what Open (Damage), Check, a Reader and
// Repair report, and that every frame outside the damage stays readable.
func TestCorruptionSegments(t *testing.T) {
	const n = 60
	tests := []struct {
		name   string
		damage func(t *testing.T, dir string, victim segment, offs []uint64)
		gap    bool // a *GapError, else a *CorruptionError
		atOpen bool // found by Open itself, not only by the background scan
		at     func(victim segment, offs []uint64) uint64
		lost   func(victim segment, offs []uint64) []int // frames gone after Repair
	}{
		{"missing segment", func(t *testing.T, dir string, v segment, offs []uint64) {
			if err := os.Remove(filepath.Join(dir, segName(v.base))); err != nil {
				t.Fatal(err)
			}
		}, true, true, func(v segment, _ []uint64) uint64 { return v.base }, framesIn},
		{"sealed segment cut short at a frame", func(t *testing.T, dir string, v segment, offs []uint64) {
			truncate(t, filepath.Join(dir, segName(v.base)), lastFrameOffset(v, offs)-int64(v.base))
		}, true, true, func(v segment, offs []uint64) uint64 { return uint64(lastFrameOffset(v, offs)) }, lastFrameIn},
		{"zeroed header of a sealed segment", func(t *testing.T, dir string, v segment, offs []uint64) {
			p := filepath.Join(dir, segName(v.base))
			b := read(t, p)
			clear(b[:headerFrameLen])
			write(t, p, b)
		}, false, true, func(v segment, _ []uint64) uint64 { return v.base }, framesIn},
		{"bad crc in a sealed segment", func(t *testing.T, dir string, v segment, offs []uint64) {
			flip(t, filepath.Join(dir, segName(v.base)), int64(headerFrameLen)+frame.HeaderLen+1)
		}, false, false, func(v segment, _ []uint64) uint64 { return v.base + uint64(headerFrameLen) }, framesIn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, &Options{SegmentSize: 1024})
			offs := appendN(t, l, 0, n)
			l.Close()
			segs, _ := listSegments(dir)
			if len(segs) < 4 {
				t.Fatalf("%d segments, want at least 4", len(segs))
			}
			victim := segs[1]
			tt.damage(t, dir, victim, offs)
			at := tt.at(victim, offs)
			named := func(err error) bool {
				var ge *GapError
				var ce *CorruptionError
				if tt.gap {
					return errors.As(err, &ge) && ge.End == at && ge.Next == filepath.Join(dir, segName(segs[2].base)) && ge.Base == segs[2].base
				}
				return errors.As(err, &ce) && ce.Offset == at && ce.Segment == filepath.Join(dir, segName(victim.base))
			}

			// Open: the log opens for appending and reports the damage.
			found := make(chan error, 4)
			l, err := Open(dir, &Options{ScanSealed: true, OnDamage: func(err error) { found <- err }})
			if err != nil {
				t.Fatalf("Open = %v, want it to open for appending", err)
			}
			if !tt.atOpen {
				if err := <-found; !named(err) {
					t.Fatalf("background scan found %v, want offset %d", err, at)
				}
			}
			if d := l.Damage(); len(d) == 0 || !named(d[0]) {
				t.Fatalf("Damage() = %v, want it named at offset %d", d, at)
			}
			if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: 100, Payload: payloadFor(100)}); err != nil {
				t.Fatal(err)
			}
			// A Reader reads every frame before the damage, then stops
			// with the same error.
			r := l.NewReader()
			read := 0
			for r.Next() {
				if r.Header().Kind != frame.KindSegmentHeader {
					read++
				}
			}
			if !named(r.Err()) {
				t.Fatalf("Reader stopped with %v after %d frames, want the damage at %d", r.Err(), read, at)
			}
			if before := countBefore(offs, at); read != before {
				t.Errorf("Reader read %d frames before the damage, want %d", read, before)
			}
			r.Close()
			l.Close()

			// Check names it.
			infos, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for _, in := range infos {
				if in.Gap != nil && named(in.Gap) || in.Err != nil && named(in.Err) {
					bad++
				}
			}
			if bad != 1 {
				t.Fatalf("Check named the damage %d times: %+v", bad, infos)
			}

			// Repair accepts the loss; nothing else is lost.
			if _, err := Repair(dir); err != nil {
				t.Fatal(err)
			}
			if infos, _ := Check(dir); hasDamage(infos) {
				t.Fatalf("Check after Repair: %+v", infos)
			}
			l = mustOpen(t, dir, nil)
			defer l.Close()
			if d := l.Damage(); len(d) > 0 {
				t.Fatalf("Damage after Repair: %v", d)
			}
			lost := map[int]bool{}
			for _, i := range tt.lost(victim, offs) {
				lost[i] = true
			}
			want := []int{}
			for i := range n {
				if !lost[i] {
					want = append(want, i)
				}
			}
			want = append(want, 100)
			if got := readAll(t, l); !equalInts(got, want) {
				t.Fatalf("after Repair read %v, want %v", got, want)
			}
		})
	}
}

// TestRetentionHoleNotAGap: a segment removed from the middle by retention
// (an older one is pinned) is no gap for Open, Check or a Reader.
func TestRetentionHoleNotAGap(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 1024, RetentionBytes: 2048})
	offs := appendN(t, l, 0, 5)
	l.Pin("old", offs[0], offs[0])
	appendN(t, l, 5, 60)
	if segs, _ := l.view(); len(segs) < 2 || segs[0].base != 0 || segs[1].base == segs[0].base+uint64(segs[0].size) {
		t.Fatalf("retention left no hole after the pinned segment: %+v", segs)
	}
	if len(readAll(t, l)) == 0 {
		t.Fatal("nothing read")
	}
	l.Close()
	if infos, _ := Check(dir); hasDamage(infos) {
		t.Fatalf("Check reports retention's hole: %+v", infos)
	}
	l = mustOpen(t, dir, nil)
	defer l.Close()
	if d := l.Damage(); len(d) > 0 {
		t.Fatalf("Damage() = %v", d)
	}
}

func framesIn(v segment, offs []uint64) []int {
	var out []int
	for i, o := range offs {
		if o >= v.base && o < v.base+uint64(v.size) {
			out = append(out, i)
		}
	}
	return out
}

// lastFrameOffset returns the offset of the last frame of v.
func lastFrameOffset(v segment, offs []uint64) int64 {
	in := framesIn(v, offs)
	return int64(offs[in[len(in)-1]])
}

func lastFrameIn(v segment, offs []uint64) []int {
	in := framesIn(v, offs)
	return in[len(in)-1:]
}

func countBefore(offs []uint64, at uint64) int {
	k := 0
	for _, o := range offs {
		if o < at {
			k++
		}
	}
	return k
}

func hasDamage(infos []SegmentInfo) bool {
	for _, in := range infos {
		if in.Err != nil || in.Gap != nil {
			return true
		}
	}
	return false
}

// TestRenamedLastSegment: a last segment whose header records another
// offset was renamed, not torn by a crash: Open refuses it, naming it,
// and leaves its bytes alone instead of truncating them away.
func TestRenamedLastSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, nil)
	appendN(t, l, 0, 10)
	l.Close()
	renamed := filepath.Join(dir, segName(4096))
	if err := os.Rename(filepath.Join(dir, segName(0)), renamed); err != nil {
		t.Fatal(err)
	}
	before := read(t, renamed)
	_, err := Open(dir, nil)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != renamed || ce.Offset != 4096 || !errors.Is(err, errOffsetMismatch) {
		t.Fatalf("Open = %v, want the renamed segment named as corrupt", err)
	}
	if after := read(t, renamed); len(after) != len(before) {
		t.Fatalf("Open changed the renamed segment: %d bytes, was %d", len(after), len(before))
	}
	infos, err := Check(dir)
	if err != nil || len(infos) != 1 || infos[0].Err == nil || infos[0].Torn {
		t.Fatalf("Check = %+v, %v; want it corrupt", infos, err)
	}
}

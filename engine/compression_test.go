package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// TestCompressionLevels checks that flushed tables are written
// uncompressed and those a compaction writes below level 0 with snappy,
// and that what was written reads back whichever level holds it.
func TestCompressionLevels(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	val := strings.Repeat("compressible text ", 64)
	// Two flushes of the same keys: overlapping tables, which a
	// compaction rewrites (a table it only moves down keeps its blocks).
	for range 2 {
		b := e.db.NewBatch()
		for i := range 2000 {
			b.Set(fmt.Appendf(nil, "zz-test-%05d", i), []byte(val), nil)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	m := e.db.Metrics()
	if m.Levels[0].TablesCount < 2 || m.Table.CompressedCountSnappy != 0 || m.Table.CompressedCountNone == 0 {
		t.Fatalf("after a flush: L0 tables %d, snappy %d, none %d; want L0 tables uncompressed",
			m.Levels[0].TablesCount, m.Table.CompressedCountSnappy, m.Table.CompressedCountNone)
	}
	if err := e.db.Compact(t.Context(), []byte("zz-"), []byte("zz."), true); err != nil {
		t.Fatal(err)
	}
	m = e.db.Metrics()
	last := len(m.Levels) - 1
	if m.Levels[last].TablesCount == 0 || m.Table.CompressedCountSnappy == 0 || m.Table.CompressedCountNone != 0 {
		t.Fatalf("after a compaction: L%d tables %d, snappy %d, none %d; want every table in the last level, snappy",
			last, m.Levels[last].TablesCount, m.Table.CompressedCountSnappy, m.Table.CompressedCountNone)
	}
	if size := m.Levels[last].TablesSize; size > 2000*int64(len(val))/4 {
		t.Errorf("last level holds %d bytes for %d of values: not compressed", size, 2000*len(val))
	}
	tables, err := e.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range tables {
		for _, tb := range level {
			p := tb.Properties
			if p.NumDataBlocks == 0 {
				continue
			}
			// Blocks are cut at their uncompressed size.
			if max := 2*p.RawKeySize/tableBlock + 2*p.RawValueSize/tableBlock + 2; p.NumDataBlocks > max {
				t.Errorf("table %s: %d data blocks for %d bytes of keys and values, want at most %d (blocks of %d bytes)",
					tb.FileNum, p.NumDataBlocks, p.RawKeySize+p.RawValueSize, max, tableBlock)
			}
		}
	}
	for _, i := range []int{0, 999, 1999} {
		v, closer, err := e.db.Get(fmt.Appendf(nil, "zz-test-%05d", i))
		if err != nil {
			t.Fatal(err)
		}
		if string(v) != val {
			t.Errorf("key %d reads back %d bytes, want %d", i, len(v), len(val))
		}
		closer.Close()
	}
}

package derive

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The events of an imported session seen for the first time are most of
// what an import writes (nine tenths of the store at 20 copies of the
// golden Claude corpus). Through a batch each of their bytes went to
// Pebble's log, a memtable, a level 0 table and, compacted, down every
// level below: at 200 copies compaction and its compression took a
// fifth of the import's CPU. So they are written once instead, sorted,
// into one table, the event table, which Pebble ingests into the lowest
// level its keys do not overlap (new sessions have the largest
// ordinals, so nothing overlaps them):
//
//	deriveImports, sessions in ordinal order
//	  │ a session with no event stored (Session.Events 0, and no key
//	  │ in its ordinal's range):     its events ─▶ event table
//	  │ any other:        DeleteRange + its events ─▶ batch
//	  ▼
//	commit: finish the event table, Ingest it, then commit the batch
//
// The table is ingested before the batch that records its sessions
// (their Events counts and the applied offset) commits, so a session's
// state never names events the store lacks. A crash between the two
// leaves events of sessions the store does not count yet: the pass that
// derives them again finds keys in their range and takes the batch
// path, whose DeleteRange drops them. The visible keys and values are
// those the batch path writes, so a rebuild and an incremental import
// still agree byte for byte.

// IngestName is the event table's file in the store's directory while
// it is written; Pebble links it in as a table of its own and removes
// the name.
const IngestName = "events.ingest"

// eventTable is the event table being written.
type eventTable struct {
	w    *sstable.Writer
	path string
	// last is the ordinal of the last session added: keys must grow.
	last uint64
}

// ingestible reports whether the events of session st may go to the
// event table: none is stored, in the batch or in the store, and its
// ordinal is past the table's last.
func (c *canonicalizer) ingestible(st *sessState) (bool, error) {
	ord := st.s.Ordinal
	if st.s.Events != 0 || c.tab != nil && ord <= c.tab.last {
		return false, nil
	}
	it, err := c.e.db.NewIter(&pebble.IterOptions{LowerBound: schema.EventKey(nil, ord, 0), UpperBound: schema.AppendU64Key(nil, schema.PrefixEvent, ord+1)})
	if err != nil {
		return false, fmt.Errorf("engine: %w", err)
	}
	found := it.First()
	if err := it.Close(); err != nil {
		return false, fmt.Errorf("engine: %w", err)
	}
	return !found, nil
}

// tableSet adds event seq of the session with ordinal ord to the event
// table, starting one.
func (c *canonicalizer) tableSet(ord, seq uint64, v []byte) error {
	if c.tab == nil {
		path := filepath.Join(c.e.dir, "db", IngestName)
		f, err := c.e.popts.FS.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return fmt.Errorf("engine: create the event table: %w", err)
		}
		wo := c.e.popts.MakeWriterOptions(len(c.e.popts.Levels)-1, c.e.db.TableFormat())
		// The table may land above the last level: none of its keys is
		// marked as overwritten there.
		wo.WritingToLowestLevel = false
		c.tab = &eventTable{w: sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo), path: path}
	}
	c.tab.last = ord
	c.keyBuf = schema.EventKey(c.keyBuf[:0], ord, seq)
	if err := c.tab.w.Set(c.keyBuf, v); err != nil {
		return fmt.Errorf("engine: write the event table: %w", err)
	}
	return nil
}

// ingestTable finishes the event table, if one is being written, and
// has Pebble ingest it. On an error the table is dropped; its sessions'
// states are not committed.
func (c *canonicalizer) ingestTable() error {
	t := c.tab
	if t == nil {
		return nil
	}
	c.tab = nil
	err := t.w.Close() // syncs the file, as Ingest requires
	if err == nil {
		err = c.e.held()
	}
	if err == nil {
		err = c.e.db.Ingest(context.Background(), []string{t.path})
	}
	if err != nil {
		c.e.popts.FS.Remove(t.path)
		return fmt.Errorf("engine: ingest the event table: %w", err)
	}
	return nil
}

// dropTable abandons the event table being written, if any.
func (c *canonicalizer) dropTable() {
	if t := c.tab; t != nil {
		c.tab = nil
		t.w.Close()
		c.e.popts.FS.Remove(t.path)
	}
}

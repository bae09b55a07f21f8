// Package wal owns the write-ahead log: the segmented, append-only file set
// that is bbengine's only source of truth. Everything else (Pebble, the
// index, packs) is derived from it and can be rebuilt from it.
//
// # Layout
//
// A log is a directory of segment files named by the logical offset of
// their first byte, as 16 lower-case hex digits, so names sort in log
// order. The logical offset of a frame is its byte position in the whole
// log: segment base + position in the segment. Every segment starts with a
// segment header frame; a segment is sealed (synced and closed) when the
// next frame would take it past Options.SegmentSize.
//
//	<dir>/
//	  LOCK                          flock(2) held by the one writer
//	  0000000000000000.wal          base 0
//	  0000000004000123.wal          base 0x4000123 = size of the first segment
//	  0000000004000123.wal.damaged-20260101T120000Z   copy kept by Repair
//	  0000000008000246.hole         a range removed on purpose; holds its end
//	  0000000004000123.sealing      segment 0x4000123 not yet synced (see below)
//
//	segment 0000000004000123.wal
//	+-----------------+------------------+------------------+-- ... --+
//	| segment header  | frame            | frame            |         |
//	| off=0x4000123   | off=0x4000153    | off=...          |         |
//	+-----------------+------------------+------------------+-- ... --+
//	 48 bytes          40-byte header + payload
//
//	frame (little-endian; see package codec/frame and docs/format/wal.md)
//	 0       4       8               16              24              32  33  34  36      40
//	+-------+-------+---------------+---------------+---------------+---+---+---+-------+---------
//	| crc   | len   | off           | exchange      | time (ns)     |knd|flg|rsv|rawLen | payload
//	+-------+-------+---------------+---------------+---------------+---+---+---+-------+---------
//	 crc = masked CRC-32C of bytes [4, 40+len)
//
//	segment header payload: "BBWAL\x00" + u16 format version (1), or
//	version 2 + a key block: u8 cipher, u8 0, u16 68, u32 key generation,
//	[60] wrapped data key (116-byte header frame)
//
// Each segment starts where the one before it ends. Retention removes
// whole segments from the front and, around pinned ones, from the middle;
// Repair may shorten a segment that is not the last. Both record a range
// they remove from the middle in a "<from>.hole" file holding its end, and
// a Reader goes on past such a gap. Any other gap means a segment was
// deleted, renamed or not copied: Check, Open (Log.Damage) and a Reader
// crossing it report a *GapError naming both segments and offsets, until
// the segment is put back or Repair accepts the loss.
//
// # Writing and durability
//
// Append encodes (and compresses) the frame in the caller's goroutine and
// takes the next offset under a lock. If no other frame is queued and
// nothing is being written, the caller writes the frame itself with one
// write(2), calls fdatasync as the SyncPolicy says, publishes the new end
// to readers and returns: a lone appender costs a write (and a sync), no
// handoff. Otherwise it queues the frame on a bounded queue for the writer
// goroutine, which drains whatever is queued, writes it with one write(2),
// syncs as the policy says, publishes, and only then acknowledges every
// append of the group. Under SyncAlways, concurrent appenders therefore
// share one fdatasync (group commit). Either way, when Append returns the
// frame and every frame before it are written to the operating system
// (under SyncAlways: on stable storage). A failed write or sync is sticky:
// every later Append returns it, because the state of the file is unknown.
//
// Under SyncInterval a goroutine syncs the active segment every
// SyncInterval; appends go on meanwhile. Under SyncInterval and SyncNone
// a rotation does not wait for the old segment to reach the disk: it
// creates "<old base>.sealing", then the next segment, and leaves the sync
// and close of the old segment and the sync of the directory to that
// goroutine, which then removes the marker. Every sync (the periodic one,
// Sync, Close, the next rotation) seals first, so the log reaches the disk
// in order. If the machine loses power before the seal, the next segment
// may be on disk while the tail of the old one is not: Open, finding the
// marker and bytes missing before the next segment, removes the segments
// after them and truncates the old one at its last whole frame, so the log
// stays a prefix of what was written, and says so in Log.Recovery. Under
// SyncAlways a rotation syncs both segments and the directory before the
// append that caused it returns.
//
// # Recovery
//
// Open first settles segments marked ".sealing" (above), then scans the
// last segment. Every frame must pass its CRC and record its
// own offset, so stale, shifted or zeroed bytes never parse. At the first
// invalid frame Open looks for any later valid frame: if there is none the
// tail was torn by a crash during a write, and Open truncates it and
// reports it through Log.Recovery. If there is one, the segment is corrupt:
// Open returns a *CorruptionError (segment, offset) and changes nothing;
// Repair keeps a copy of the segment and truncates it. Of the sealed
// segments Open reads only each header frame, and it looks for gaps; what
// it finds does not stop appending and is listed by Log.Damage.
// Options.ScanSealed verifies every frame of them in the background,
// adding what it finds; Check verifies every segment at once.
//
// # Encryption
//
// With Options.Keys every segment the log creates is format version 2:
// its header frame holds a fresh data key wrapped by the data
// directory's active key generation, and every frame in it is encrypted
// with AES-256-GCM under that key (frame.FlagEncrypted): a random nonce,
// the frame header as associated data, the CRC over the ciphertext.
// Append lays the frame out in the caller's goroutine; the writer
// encrypts it once its offset and segment are final, under the same lock
// as the write. Readers decrypt into a buffer of their own. Check, Copy,
// Repair, recovery and retention need no key. Rewrap re-wraps data keys
// to a new generation through a journal (docs/format/wal.md).
//
// # Copying
//
// Log.Copy copies the log while appends go on (bbengine backup): it pins
// every segment against retention, syncs, and copies the sealed
// segments whole and the active one up to End, the end of the last
// whole frame written before the sync; through a read-only view it
// copies what is on disk and cuts the copy at its last whole frame. The
// copy is verified with Check.
//
// # Concurrency
//
// A Log is safe for concurrent use by multiple goroutines. A Reader is not;
// use one per goroutine, any number at once, concurrently with appends.
// Readers see a frame once its write has returned (before it is synced,
// unless the policy is SyncAlways). One process may write a log at a time
// (dir/LOCK); any number of processes may open it with Options.ReadOnly,
// which never modifies anything and treats an incomplete frame at the end
// of the last segment as not yet written.
//
// # Imports
//
// It may import codec/frame and internal/*, nothing else of bbengine's.
package wal

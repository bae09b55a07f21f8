// Package walbench measures a lone WAL appender against raw writes of the
// same bytes. It is shared by wal's BenchmarkAppendLone and by the
// bench/cmd/walbench driver, which interleaves the two in rounds and
// prints their ratio.
//
// A Target appends or writes one record per Op. The WAL target is one
// goroutine calling Log.Append with a fixed payload; the raw target writes
// the bytes that append puts on disk (a frame: 40-byte header and the
// payload as is) to an os.File and makes them as durable as the WAL's
// sync policy says an acknowledged append is:
//
//	policy     raw target per record                  what Append returning means
//	interval   bufio.Writer.Write + Flush (one write)  written to the OS
//	none       bufio.Writer.Write + Flush (one write)  written to the OS
//	always     write + fdatasync                       on stable storage
//
// The raw target starts a new file every wal.Options.SegmentSize bytes
// (64 MiB), as the WAL starts a segment, but never syncs it: that is the
// WAL's price for the order of its segments on disk.
//
// It may import wal and codec/frame; only bench/cmd/walbench imports it.
package walbench

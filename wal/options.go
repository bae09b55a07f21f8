package wal

import (
	"fmt"
	"time"

	"github.com/bbengine/bbengine/internal/crypt"
)

// SyncPolicy says when the writer calls fdatasync.
type SyncPolicy int

// Sync policies.
const (
	// SyncInterval acknowledges an append once it is written to the
	// operating system (it survives a crash of the process) and syncs every
	// Options.SyncInterval, after rotation (in the background, before any
	// later sync) and on Close.
	SyncInterval SyncPolicy = iota
	// SyncAlways acknowledges an append once it is on stable storage. All
	// appends drained in one group share one fdatasync (group commit).
	SyncAlways
	// SyncNone never syncs except after rotation (in the background)
	// and on Close, and when Sync is called.
	SyncNone
)

var syncNames = [...]string{"interval", "always", "none"}

func (p SyncPolicy) String() string {
	if p >= 0 && int(p) < len(syncNames) {
		return syncNames[p]
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy parses "always", "interval" or "none".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for i, n := range syncNames {
		if n == s {
			return SyncPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("wal: unknown sync policy %q (want always, interval or none)", s)
}

// Options configure a Log. The zero value, like a nil *Options, means
// defaults.
type Options struct {
	// SegmentSize is the size in bytes at which the writer starts a new
	// segment. A segment holds at least one frame after its header, so one
	// large frame may take it past this size. The default is 64 MiB.
	SegmentSize int64
	// Sync is the fsync policy. The default is SyncInterval.
	Sync SyncPolicy
	// SyncInterval is the period of SyncInterval. The default is 100 ms.
	SyncInterval time.Duration
	// QueueLen bounds the number of appends waiting for the writer; Append
	// blocks while the queue is full. The default is 1024.
	QueueLen int
	// NoCompression stores every payload as is. The default is false:
	// payloads of frame.MinCompressLen bytes or more are stored as a snappy
	// block when that is smaller.
	NoCompression bool
	// RetentionAge drops sealed segments last written longer ago than this.
	// The default is 0: keep segments regardless of age.
	RetentionAge time.Duration
	// RetentionBytes drops the oldest sealed segments while the log is
	// larger than this. The default is 0: no size cap.
	RetentionBytes int64
	// ReadOnly opens the log for reading only: nothing is truncated or
	// created, no lock is taken, and another process may be appending. The
	// default is false.
	ReadOnly bool
	// FaultWrite, when set, is asked before every write and sync the
	// writer makes, with the file's path and the bytes about to be
	// written (0 for a sync); an error it returns fails that write as
	// the operating system's would. It is for fault tests (a full
	// disk, an I/O error); leave it nil otherwise.
	FaultWrite func(path string, n int) error
	// ScanSealed makes a writer verify every frame of the sealed segments
	// in the background after Open, as Check does; what it finds is added
	// to Damage and passed to OnDamage. Open itself reads only each sealed
	// segment's header frame. The default is false.
	ScanSealed bool
	// Keys are the unlocked keys of the data directory. With keys, every
	// segment the log creates holds a data key wrapped by them (format
	// version 2) and every frame is encrypted; a log whose active segment
	// is in the clear starts a new segment first. Readers decrypt with
	// them, and refuse a frame in the clear (but each segment's header
	// frame) as not authentic: anyone can write one with a valid CRC.
	// The default is nil: new segments are written in the clear,
	// and an encrypted segment can be checked, copied, repaired and
	// retained but not appended to or read (ErrNoKey).
	Keys *crypt.Keys
	// OnDamage, when set, is called with each problem found in the
	// background scan of ScanSealed (a *CorruptionError), from another
	// goroutine.
	OnDamage func(error)
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.SegmentSize <= 0 {
		r.SegmentSize = 64 << 20
	}
	if r.SyncInterval <= 0 {
		r.SyncInterval = 100 * time.Millisecond
	}
	if r.QueueLen <= 0 {
		r.QueueLen = 1024
	}
	return r
}

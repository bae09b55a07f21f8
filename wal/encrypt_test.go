package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// TestEncryptedLog: a log with keys writes version 2 segments of
// encrypted frames that read back with the keys, through rotations,
// batches, caller-compressed records and a reopen; without the keys it
// can be checked and its frames listed but not appended to or read.
func TestEncryptedLog(t *testing.T) {
	dir := t.TempDir()
	keys := crypt.Ephemeral()
	l := mustOpen(t, dir, &Options{Keys: keys, SegmentSize: 2048})
	offs := appendN(t, l, 0, 40)
	if offs[0] != uint64(headerFrameLenEnc) {
		t.Errorf("first offset %d, want %d (a version 2 header)", offs[0], headerFrameLenEnc)
	}
	recs := []Record{
		{Kind: frame.KindResponseBody, Exchange: 40, Payload: payloadFor(40)},
		{Kind: frame.KindResponseBody, Exchange: 41, Payload: payloadFor(41)},
	}
	if _, err := l.AppendBatch(recs); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l); len(got) != 42 {
		t.Fatalf("read %d frames, want 42", len(got))
	}
	l.Close()

	infos, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) < 3 {
		t.Fatalf("%d segments, want several", len(infos))
	}
	for _, in := range infos {
		if in.Err != nil || in.Torn || !in.Encrypted || in.KeyGen != keys.Active() || in.Version != VersionEncrypted {
			t.Fatalf("Check without a key: %+v", in)
		}
	}

	l = mustOpen(t, dir, &Options{Keys: keys, SegmentSize: 2048})
	appendN(t, l, 42, 8)
	if got := readAll(t, l); len(got) != 50 {
		t.Fatalf("after reopen read %d frames, want 50", len(got))
	}
	l.Close()

	l = mustOpen(t, dir, nil)
	if _, err := l.Append(Record{Kind: frame.KindError, Payload: []byte("x")}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Append without keys = %v, want ErrNoKey", err)
	}
	if _, err := l.AppendBatch(recs); !errors.Is(err, ErrNoKey) {
		t.Fatalf("AppendBatch without keys = %v, want ErrNoKey", err)
	}
	r := l.NewReader()
	n := 0
	for r.Next() {
		if r.Header().Kind == frame.KindSegmentHeader {
			continue
		}
		n++
		if _, err := r.Payload(); !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "BBENGINE_PASSPHRASE") {
			t.Fatalf("Payload without keys = %v, want ErrNoKey", err)
		}
	}
	if r.Err() != nil || n != 50 {
		t.Fatalf("listed %d frames without keys (%v), want 50", n, r.Err())
	}
	r.Close()
	l.Close()

	ro := mustOpen(t, dir, &Options{ReadOnly: true, Keys: keys})
	if got := readAll(t, ro); len(got) != 50 {
		t.Fatalf("read-only with keys read %d frames, want 50", len(got))
	}
	other := mustOpen(t, dir, &Options{ReadOnly: true, Keys: crypt.Ephemeral()})
	r = other.NewReader()
	for r.Next() && r.Header().Kind == frame.KindSegmentHeader {
	}
	var ke *KeyError
	if _, err := r.Payload(); !errors.As(err, &ke) || ke.Segment != filepath.Join(dir, segName(0)) {
		t.Fatalf("Payload under another directory's keys = %v, want a KeyError naming the segment", err)
	}
	r.Close()
	if _, err := Open(dir, &Options{Keys: crypt.Ephemeral()}); !errors.As(err, &ke) {
		t.Fatalf("Open for writing under other keys = %v, want a KeyError", err)
	}
}

// TestEncryptionTurnedOn: opening a clear log with keys starts a new,
// encrypted segment rather than append encrypted frames to a clear one.
// Through keys only the encrypted frames read: a clear frame is one
// anyone could have written (bbengine makes an encrypted directory only
// empty, so it never holds one); without keys the clear ones do.
func TestEncryptionTurnedOn(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, nil)
	appendN(t, l, 0, 5)
	l.Close()
	keys := crypt.Ephemeral()
	l = mustOpen(t, dir, &Options{Keys: keys})
	appendN(t, l, 5, 5)
	r := l.NewReader()
	read, refused := 0, 0
	for r.Next() {
		if r.Header().Kind == frame.KindSegmentHeader {
			continue
		}
		if _, err := r.Payload(); err == nil {
			read++
		} else if errors.Is(err, ErrAuth) {
			refused++
		} else {
			t.Fatal(err)
		}
	}
	r.Close()
	if read != 5 || refused != 5 {
		t.Fatalf("with keys: read %d frames, refused %d; want 5 and 5", read, refused)
	}
	l.Close()
	infos, err := Check(dir)
	if err != nil || len(infos) != 2 {
		t.Fatalf("Check = %d segments, %v; want 2", len(infos), err)
	}
	if infos[0].Encrypted || infos[0].Version != Version || infos[0].Kinds[frame.KindResponseBody] != 5 {
		t.Errorf("first segment %+v, want the 5 clear frames", infos[0])
	}
	if !infos[1].Encrypted || infos[1].Kinds[frame.KindResponseBody] != 5 {
		t.Errorf("second segment %+v, want the 5 encrypted frames", infos[1])
	}
	// Opening it again with keys appends to the encrypted segment.
	l = mustOpen(t, dir, &Options{Keys: keys})
	appendN(t, l, 10, 1)
	l.Close()
	if segs, _ := listSegments(dir); len(segs) != 2 {
		t.Fatalf("%d segments after a reopen, want 2", len(segs))
	}
}

// TestEncryptedCorruption is the corruption table of an encrypted log:
// damage whose CRC was fixed up passes Check and Open and is caught by
// authentication, with the segment and offset; damage that was not still
// fails the CRC as in a clear log.
func TestEncryptedCorruption(t *testing.T) {
	const n = 10
	fixCRC := func(b []byte) {
		f, err := frame.ParseHeader(b)
		if err != nil {
			panic(err)
		}
		binary.LittleEndian.PutUint32(b, frame.Checksum(b[4:f.Size()]))
	}
	tests := []struct {
		name     string
		damage   func(b []byte, offs []uint64)
		corrupt  bool // Check and Open report a CorruptionError at frame 3
		authAt   int  // frame whose Payload fails authentication, or -1
		keyError bool // the segment's data key does not unwrap
	}{
		{"ciphertext byte flipped, CRC fixed", func(b []byte, offs []uint64) {
			b[offs[3]+frame.HeaderLen+frame.NonceLen+2] ^= 1
			fixCRC(b[offs[3]:])
		}, false, 3, false},
		{"header field changed, CRC fixed", func(b []byte, offs []uint64) {
			binary.LittleEndian.PutUint64(b[offs[3]+16:], 999) // the exchange
			fixCRC(b[offs[3]:])
		}, false, 3, false},
		{"frames swapped, CRC fixed", func(b []byte, offs []uint64) {
			// Frame 4's bytes moved to frame 3's place with frame 3's
			// offset: only the AAD can tell.
			f3 := bytes.Clone(b[offs[3]:offs[4]])
			f4 := bytes.Clone(b[offs[4]:offs[5]])
			if len(f3) != len(f4) {
				panic("frames differ in size")
			}
			binary.LittleEndian.PutUint64(f4[8:], offs[3])
			fixCRC(f4)
			copy(b[offs[3]:], f4)
		}, false, 3, false},
		{"key block changed, CRC fixed", func(b []byte, _ []uint64) {
			b[frame.HeaderLen+len(segMagic)+2+8+20] ^= 1 // the wrapped key
			fixCRC(b)
		}, false, 0, true},
		{"ciphertext byte flipped", func(b []byte, offs []uint64) {
			b[offs[3]+frame.HeaderLen+frame.NonceLen+2] ^= 1
		}, true, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			keys := crypt.Ephemeral()
			l := mustOpen(t, dir, &Options{Keys: keys})
			var offs []uint64
			for i := range n {
				// Equal sizes, so that two frames can be swapped.
				off, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: []byte(strings.Repeat("x", 100) + string(rune('a'+i)))})
				if err != nil {
					t.Fatal(err)
				}
				offs = append(offs, off)
			}
			offs = append(offs, offs[n-1]+(offs[1]-offs[0]))
			l.Close()
			path := filepath.Join(dir, segName(0))
			b := read(t, path)
			tt.damage(b, offs)
			write(t, path, b)

			infos, err := Check(dir)
			if err != nil || len(infos) != 1 {
				t.Fatal(infos, err)
			}
			if tt.corrupt {
				var ce *CorruptionError
				if !errors.As(infos[0].Err, &ce) || ce.Offset != offs[3] {
					t.Fatalf("Check: %v, want a corruption at %d", infos[0].Err, offs[3])
				}
				if _, err := Open(dir, &Options{Keys: keys}); !errors.As(err, &ce) || ce.Offset != offs[3] {
					t.Fatalf("Open: %v, want a corruption at %d", err, offs[3])
				}
				return
			}
			if infos[0].Err != nil || infos[0].Torn {
				t.Fatalf("Check without the key = %+v, want clean (the CRC is valid)", infos[0])
			}
			l, err = Open(dir, &Options{Keys: keys})
			if tt.keyError {
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Segment != path || !errors.Is(err, crypt.ErrAuth) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Open = %v, want a KeyError naming %s", err, path)
				}
				// A reader says the same.
				l = mustOpen(t, dir, &Options{ReadOnly: true, Keys: keys})
			} else if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			r := l.NewReader()
			defer r.Close()
			i := -1
			for r.Next() {
				if r.Header().Kind == frame.KindSegmentHeader {
					continue
				}
				i++
				_, err := r.Payload()
				if tt.keyError {
					var ke *KeyError
					if !errors.As(err, &ke) || ke.Segment != path {
						t.Fatalf("Payload = %v, want a KeyError naming %s", err, path)
					}
					return
				}
				if i != tt.authAt {
					if err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
					continue
				}
				var ce *CorruptionError
				if !errors.As(err, &ce) || !errors.Is(err, ErrAuth) || !errors.Is(err, ErrCorruption) || ce.Offset != offs[i] || ce.Segment != path {
					t.Fatalf("Payload of frame %d = %v, want ErrAuth at %d in %s", i, err, offs[i], path)
				}
				msg := err.Error()
				if !strings.Contains(msg, "fails authentication") || strings.Contains(msg, "wal repair") || !strings.Contains(msg, path) {
					t.Errorf("message %q", msg)
				}
			}
			if r.Err() != nil || i != n-1 {
				t.Fatalf("read %d frames, %v", i+1, r.Err())
			}
		})
	}
}

// TestSegmentVersion: a header of an unknown future version is named as
// such.
func TestSegmentVersion(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{Keys: crypt.Ephemeral()})
	appendN(t, l, 0, 2)
	l.Close()
	path := filepath.Join(dir, segName(0))
	b := read(t, path)
	binary.LittleEndian.PutUint16(b[frame.HeaderLen+len(segMagic):], 3)
	binary.LittleEndian.PutUint32(b, frame.Checksum(b[4:headerFrameLenEnc]))
	write(t, path, b)
	infos, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if e := infos[0].Err; e == nil || !strings.Contains(e.Error(), "segment format version 3, this build reads versions 1 and 2") {
		t.Fatalf("Check = %v", e)
	}
}

// TestEncryptedCopy: a copy of an encrypted log is made and verified
// without reading a payload, and reads back with the keys.
func TestEncryptedCopy(t *testing.T) {
	dir := t.TempDir()
	keys := crypt.Ephemeral()
	l := mustOpen(t, dir, &Options{Keys: keys, SegmentSize: 1024})
	appendN(t, l, 0, 30)
	dst := filepath.Join(t.TempDir(), "copy")
	c, err := l.Copy(dst)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if len(c.Segments) < 2 {
		t.Fatalf("copied %d segments", len(c.Segments))
	}
	cl := mustOpen(t, dst, &Options{Keys: keys})
	defer cl.Close()
	if got := readAll(t, cl); len(got) != 30 {
		t.Fatalf("the copy reads %d frames, want 30", len(got))
	}
}

// TestEncryptedRepair: Repair cuts a torn or corrupt encrypted log
// without the key, and the log reads back with it.
func TestEncryptedRepair(t *testing.T) {
	dir := t.TempDir()
	keys := crypt.Ephemeral()
	l := mustOpen(t, dir, &Options{Keys: keys})
	offs := appendN(t, l, 0, 10)
	l.Close()
	flip(t, filepath.Join(dir, segName(0)), int64(offs[4])+frame.HeaderLen+20)
	fixed, err := Repair(dir)
	if err != nil || len(fixed) != 1 || fixed[0].Offset != offs[4] {
		t.Fatalf("Repair = %+v, %v", fixed, err)
	}
	l = mustOpen(t, dir, &Options{Keys: keys})
	defer l.Close()
	appendN(t, l, 4, 1)
	if got := readAll(t, l); len(got) != 5 {
		t.Fatalf("read %v after repair", got)
	}
}

// TestSecretsAtRest appends frames holding a marker and looks for it in
// every byte of every file of the log directory: it is there in a clear
// log and nowhere in an encrypted one, whether compressed or not.
func TestSecretsAtRest(t *testing.T) {
	const marker = "sk-ant-api03-SECRET-MARKER-7f3a9c"
	for _, tt := range []struct {
		name    string
		keys    *crypt.Keys
		noComp  bool
		present bool
	}{
		{"clear", nil, true, true},
		{"encrypted raw", crypt.Ephemeral(), true, false},
		{"encrypted snappy", crypt.Ephemeral(), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, &Options{Keys: tt.keys, NoCompression: tt.noComp, SegmentSize: 4096})
			p := []byte(`{"authorization":"Bearer ` + marker + `"}`)
			for i := range 50 {
				if _, err := l.Append(Record{Kind: frame.KindRequestStart, Exchange: uint64(i), Payload: p}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.AppendBatch([]Record{{Kind: frame.KindRequestBody, Payload: p}, {Kind: frame.KindRequestBody, Payload: p}}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Copy(filepath.Join(dir, "backup")); err != nil {
				t.Fatal(err)
			}
			l.Close()
			found, files := 0, 0
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				files++
				if bytes.Contains(read(t, path), []byte(marker)) {
					found++
				}
				return nil
			})
			if files < 4 {
				t.Fatalf("only %d files written", files)
			}
			if tt.present && found == 0 {
				t.Fatal("the marker is not in the clear log: the test cannot see it")
			}
			if !tt.present && found > 0 {
				t.Fatalf("the marker is in %d files of the encrypted log", found)
			}
		})
	}
}

// TestEncryptedAllocs: an encrypted append, lone or batched, allocates
// nothing in the steady state.
func TestEncryptedAllocs(t *testing.T) {
	p := bytes.Repeat([]byte("allocation free "), 256)
	for _, policy := range []SyncPolicy{SyncNone, SyncInterval} {
		for _, compress := range []bool{false, true} {
			l := mustOpen(t, t.TempDir(), &Options{Sync: policy, NoCompression: !compress, Keys: crypt.Ephemeral()})
			rec := Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: p}
			recs := []Record{rec, rec, rec}
			appendN(t, l, 0, 10)
			l.AppendBatch(recs)
			if a := testing.AllocsPerRun(300, func() {
				if _, err := l.Append(rec); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("sync=%v compress=%v: %v allocs per encrypted Append, want 0", policy, compress, a)
			}
			if a := testing.AllocsPerRun(300, func() {
				if _, err := l.AppendBatch(recs); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("sync=%v compress=%v: %v allocs per encrypted AppendBatch, want 0", policy, compress, a)
			}
			l.Close()
		}
	}
}

// TestEncryptedReaderAllocs: reading encrypted frames allocates nothing
// once the segment's key is unwrapped.
func TestEncryptedReaderAllocs(t *testing.T) {
	l := mustOpen(t, t.TempDir(), &Options{Keys: crypt.Ephemeral()})
	defer l.Close()
	appendN(t, l, 0, 2000)
	r := l.NewReader()
	defer r.Close()
	r.Next()
	r.Next()
	r.Payload()
	if a := testing.AllocsPerRun(1000, func() {
		if !r.Next() {
			t.Fatal(r.Err())
		}
		if _, err := r.Payload(); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("%v allocs per encrypted Reader.Next and Payload, want 0", a)
	}
}

// TestEncryptedResume: on an encrypted log, a write torn by a full disk
// and a disk that fills across rotations are resumed from, and the log
// reads back whole with the keys, before and after a reopen.
func TestEncryptedResume(t *testing.T) {
	keys := crypt.Ephemeral()
	var fail atomic.Bool
	dir := t.TempDir()
	var l *Log
	l = mustOpen(t, dir, &Options{Keys: keys, SegmentSize: 4 << 10, NoCompression: true, FaultWrite: func(path string, n int) error {
		if fail.Load() && n > 0 {
			l.f.WriteAt(make([]byte, n/2+1), l.pos) // half the bytes land
			return syscall.ENOSPC
		}
		return nil
	}})
	appendN(t, l, 0, 20)
	fail.Store(true)
	for i := 20; i < 40; i++ {
		if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: payloadFor(i)}); err == nil {
			t.Fatal("append on a full disk succeeded")
		}
	}
	fail.Store(false)
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20, 60)
	want := make([]int, 80)
	for i := range want {
		want[i] = i
	}
	if got := readAll(t, l); !equalInts(got, want) {
		t.Fatalf("read %d frames, want 80", len(got))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, in := range keyInfos(t, dir) {
		if !in.Encrypted || in.Err != nil || in.Torn {
			t.Fatalf("segment %+v", in)
		}
	}
	l = mustOpen(t, dir, &Options{Keys: keys})
	defer l.Close()
	if got := readAll(t, l); !equalInts(got, want) {
		t.Fatalf("after reopen read %d frames, want 80", len(got))
	}
}

func keyInfos(t *testing.T, dir string) []SegmentInfo {
	t.Helper()
	infos, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	return infos
}

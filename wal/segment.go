package wal

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// segExt is the file name extension of segments.
const segExt = ".wal"

// Segment header format versions. A log without Options.Keys writes
// version 1; a log with keys writes version 2, whose header also holds
// the segment's wrapped data key. This build reads both.
const (
	Version          = 1
	VersionEncrypted = 2
)

// segMagic starts the payload of every segment header frame, followed by
// the format version (u16, little-endian).
const segMagic = "BBWAL\x00"

// The key block of a version 2 header follows the version:
//
//	 8 u8  cipher (cipherAESGCM)
//	 9 u8  reserved, 0
//	10 u16 key block length (keyBlockLen, counted from offset 8)
//	12 u32 generation of the key that wraps the data key
//	16 [60] wrapped data key: nonce[12] || ciphertext[32] || tag[16]
//
// The wrap's associated data is wrapAADPrefix || u64 segment base ||
// payload[0:12]; crypt.Keys adds the data directory's id and the
// generation, so the wrapped key cannot be moved to another segment,
// directory or generation.
const (
	cipherAESGCM  = 1
	keyBlockLen   = 4 + 4 + crypt.WrappedSize
	wrapAADPrefix = "bbengine wal dek"
)

// Encoded sizes of a segment header frame: version 1 and version 2.
const (
	headerFrameLen    = frame.HeaderLen + len(segMagic) + 2
	headerFrameLenEnc = headerFrameLen + keyBlockLen
)

// headerLen returns the size of the header frame a log writes: version
// 2 when it encrypts.
func headerLen(encrypted bool) int {
	if encrypted {
		return headerFrameLenEnc
	}
	return headerFrameLen
}

// segKey is the key block of a version 2 segment header.
type segKey struct {
	gen     uint32
	wrapped [crypt.WrappedSize]byte
	ad      [len(wrapAADPrefix) + 8 + 12]byte // the wrap's associated data
}

// unwrap returns the AEAD of the segment's data key.
func (k *segKey) unwrap(keys *crypt.Keys) (cipher.AEAD, error) {
	dk, err := keys.Unwrap(k.gen, k.wrapped[:], k.ad[:])
	if err != nil {
		return nil, err
	}
	return crypt.NewAEAD(dk), nil
}

// wrapAD returns the associated data of the wrapped key in the header
// payload p of the segment at base.
func wrapAD(base uint64, p []byte) (ad [len(wrapAADPrefix) + 8 + 12]byte) {
	copy(ad[:], wrapAADPrefix)
	binary.LittleEndian.PutUint64(ad[len(wrapAADPrefix):], base)
	copy(ad[len(wrapAADPrefix)+8:], p[:12])
	return ad
}

// segment is one segment file as the log knows it.
type segment struct {
	base    uint64    // logical offset of its first byte
	size    int64     // bytes of complete frames (the file size for read-only logs)
	modTime time.Time // last modification, for retention
}

// segName returns the file name of the segment starting at base: 16
// lower-case hex digits, so names sort in offset order.
func segName(base uint64) string { return fmt.Sprintf("%016x%s", base, segExt) }

// parseSegName returns the base offset named by a segment file name.
func parseSegName(name string) (uint64, bool) {
	if len(name) != 16+len(segExt) || !strings.HasSuffix(name, segExt) {
		return 0, false
	}
	base, err := strconv.ParseUint(name[:16], 16, 64)
	return base, err == nil
}

// listSegments returns the segments in dir in offset order, with their
// file sizes.
func listSegments(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segment
	for _, e := range ents {
		base, ok := parseSegName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			if os.IsNotExist(err) {
				continue // removed by retention meanwhile
			}
			return nil, err
		}
		segs = append(segs, segment{base: base, size: info.Size(), modTime: info.ModTime()})
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].base < segs[j].base })
	return segs, nil
}

// appendHeaderFrame appends the version 1 header frame of the segment at
// base.
func appendHeaderFrame(dst []byte, base uint64, now time.Time) []byte {
	var p [len(segMagic) + 2]byte
	copy(p[:], segMagic)
	binary.LittleEndian.PutUint16(p[len(segMagic):], Version)
	return frame.AppendFrame(dst, frame.Header{Offset: base, Time: now.UnixNano(), Kind: frame.KindSegmentHeader}, p[:], false)
}

// keyHeaderPayload returns the payload of a version 2 header whose data
// key generation gen wrapped as wrapped.
func keyHeaderPayload(gen uint32, wrapped []byte) [len(segMagic) + 2 + keyBlockLen]byte {
	var p [len(segMagic) + 2 + keyBlockLen]byte
	copy(p[:], segMagic)
	binary.LittleEndian.PutUint16(p[6:], VersionEncrypted)
	p[8] = cipherAESGCM
	binary.LittleEndian.PutUint16(p[10:], keyBlockLen)
	binary.LittleEndian.PutUint32(p[12:], gen)
	copy(p[16:], wrapped)
	return p
}

// newKeyHeader appends the version 2 header frame of the segment at
// base, with a fresh data key from keys, and returns the key's AEAD.
func newKeyHeader(dst []byte, base uint64, now time.Time, keys *crypt.Keys) ([]byte, cipher.AEAD, error) {
	p := keyHeaderPayload(0, nil)
	ad := wrapAD(base, p[:])
	dk, err := keys.NewDataKey(ad[:])
	if err != nil {
		return dst, nil, fmt.Errorf("wal: data key of segment %016x: %w", base, err)
	}
	p = keyHeaderPayload(dk.Gen, dk.Wrapped[:])
	dst = frame.AppendFrame(dst, frame.Header{Offset: base, Time: now.UnixNano(), Kind: frame.KindSegmentHeader}, p[:], false)
	return dst, crypt.NewAEAD(dk.Key), nil
}

// checkHeaderFrame reports why f cannot be the first frame of a segment.
func checkHeaderFrame(f *frame.Frame) error {
	_, _, err := parseHeaderFrame(f)
	return err
}

// parseHeaderFrame checks that f is a segment header frame and returns
// its format version and, for version 2, its key block.
func parseHeaderFrame(f *frame.Frame) (int, segKey, error) {
	var k segKey
	p := f.Payload
	if f.Kind != frame.KindSegmentHeader || f.Compressed() || f.Encrypted() || len(p) < len(segMagic)+2 ||
		string(p[:len(segMagic)]) != segMagic {
		return 0, k, errNoHeader
	}
	v := int(binary.LittleEndian.Uint16(p[len(segMagic):]))
	switch v {
	case Version:
		if len(p) != len(segMagic)+2 {
			return v, k, fmt.Errorf("segment header of format version 1 is %d bytes, want %d", len(p), len(segMagic)+2)
		}
	case VersionEncrypted:
		if len(p) != len(segMagic)+2+keyBlockLen {
			return v, k, fmt.Errorf("segment header of format version 2 is %d bytes, want %d", len(p), len(segMagic)+2+keyBlockLen)
		}
		if p[8] != cipherAESGCM {
			return v, k, fmt.Errorf("segment is encrypted with cipher %d, this build knows cipher %d (AES-256-GCM)", p[8], cipherAESGCM)
		}
		if p[9] != 0 || binary.LittleEndian.Uint16(p[10:]) != keyBlockLen {
			return v, k, fmt.Errorf("segment header key block is malformed (reserved %d, length %d, want 0 and %d)", p[9], binary.LittleEndian.Uint16(p[10:]), keyBlockLen)
		}
		k.gen = binary.LittleEndian.Uint32(p[12:])
		copy(k.wrapped[:], p[16:])
		k.ad = wrapAD(f.Offset, p)
	default:
		return v, k, fmt.Errorf("segment format version %d, this build reads versions %d and %d; upgrade bbengine", v, Version, VersionEncrypted)
	}
	return v, k, nil
}

// decodeAt decodes the frame at data[pos:] of the segment at base and
// checks its self-offset (and, at position 0, that it is a segment header).
func decodeAt(data []byte, base uint64, pos int64) (frame.Frame, error) {
	f, err := frame.Decode(data[pos:])
	if err != nil {
		return f, err
	}
	if f.Offset != base+uint64(pos) {
		return f, errOffsetMismatch
	}
	if pos == 0 {
		if err := checkHeaderFrame(&f); err != nil {
			return f, err
		}
	}
	return f, nil
}

// segScan is the result of scanning one segment's bytes.
type segScan struct {
	validEnd  int64 // end of the leading run of valid frames
	frames    int   // frames in that run
	bad       error // why the bytes at validEnd are not a frame; nil if validEnd == len
	nextValid int64 // position of the first valid frame after validEnd, or -1
}

// scanBytes walks the frames of a segment held in data, calling visit for
// each valid one (the frame aliases data), and stops at the first invalid
// frame, after which it looks for any later valid frame.
func scanBytes(data []byte, base uint64, visit func(h frame.Header)) segScan {
	s := segScan{nextValid: -1}
	pos := int64(0)
	for pos < int64(len(data)) {
		f, err := decodeAt(data, base, pos)
		if err != nil {
			s.validEnd, s.bad = pos, err
			s.nextValid = findValid(data, base, pos+1)
			return s
		}
		if visit != nil {
			visit(f.Header)
		}
		pos += int64(f.Size())
		s.frames++
	}
	s.validEnd = pos
	return s
}

// findValid returns the position of the first valid frame at or after
// from, or -1. A candidate must record its own offset, which makes the
// scan cheap: one 8-byte compare per position before any CRC.
func findValid(data []byte, base uint64, from int64) int64 {
	for q := from; q+frame.HeaderLen <= int64(len(data)); q++ {
		if binary.LittleEndian.Uint64(data[q+8:]) != base+uint64(q) {
			continue
		}
		if _, err := frame.Decode(data[q:]); err == nil {
			return q
		}
	}
	return -1
}

// readSegment reads the whole segment file into buf (reused when large
// enough) and returns its bytes.
func readSegment(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := int(info.Size())
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, err := io.ReadFull(f, buf)
	if err == io.ErrUnexpectedEOF {
		err = nil // truncated meanwhile: scan what is there
	}
	return buf[:m], err
}

// SegmentInfo describes one segment as found by Check.
type SegmentInfo struct {
	Path      string             // file path
	Base      uint64             // logical offset of its first byte
	Size      int64              // file size
	Frames    int                // valid frames, segment header included
	Kinds     map[frame.Kind]int // valid frames by kind
	First     uint64             // offset of the first frame
	Last      uint64             // offset of the last valid frame
	FirstTime int64              // unix nanoseconds of the first non-header frame, 0 if none
	LastTime  int64              // unix nanoseconds of the last valid frame
	// ValidEnd is the segment position after the last valid frame; it is
	// less than Size when the segment has a torn tail or is corrupt.
	ValidEnd int64
	// Torn reports an invalid tail of the last segment with nothing valid
	// after it: a write cut short by a crash. Opening for writing truncates it.
	Torn bool
	// TornErr says why the bytes at ValidEnd of a torn tail are invalid.
	TornErr error
	// Err is a *CorruptionError if the segment is corrupt.
	Err error
	// Gap is a *GapError if the segment does not start where the one
	// before it ends: bytes of the log are missing before it.
	Gap error
	// Version is the segment's format version (1 or 2), 0 when its
	// header frame is invalid.
	Version int
	// Encrypted reports a segment whose frames are encrypted (format
	// version 2), and KeyGen the generation of the key that wraps its
	// data key. Both are read from the header without the key.
	Encrypted bool
	KeyGen    uint32
}

// Check reads every segment of the log in dir and verifies every frame's
// checksum and self-offset, and that each segment starts where the one
// before it ends (SegmentInfo.Gap). It never modifies the log and may run while a
// writer appends (a frame being written then looks like a torn tail). It
// returns an error only when the directory or a file cannot be read;
// corruption is reported per segment in SegmentInfo.Err.
func Check(dir string) ([]SegmentInfo, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	var buf []byte
	infos := make([]SegmentInfo, 0, len(segs))
	for i, s := range segs {
		path := filepath.Join(dir, segName(s.base))
		data, err := readSegment(path, buf)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return infos, fmt.Errorf("read segment %s: %w", path, err)
		}
		buf = data[:0]
		info := checkSegment(path, s.base, data, i == len(segs)-1)
		if i+1 < len(segs) && info.Err == nil && s.base+uint64(info.Size) > segs[i+1].base {
			info.Err = &CorruptionError{Segment: path, Offset: segs[i+1].base, Err: errOverlap}
		}
		infos = append(infos, info)
	}
	checked := make([]segment, len(infos))
	for i, in := range infos {
		checked[i] = segment{base: in.Base, size: in.Size}
	}
	for _, g := range findGaps(dir, checked) {
		for i := range infos {
			if infos[i].Base == g.Base {
				infos[i].Gap = g
			}
		}
	}
	return infos, nil
}

// checkSegment scans one segment's bytes.
func checkSegment(path string, base uint64, data []byte, last bool) SegmentInfo {
	info := SegmentInfo{Path: path, Base: base, Size: int64(len(data)), Kinds: map[frame.Kind]int{}, First: base}
	sc := scanBytes(data, base, func(f frame.Header) {
		info.Kinds[f.Kind]++
		info.Last = f.Offset
		if f.Kind != frame.KindSegmentHeader && info.FirstTime == 0 {
			info.FirstTime = f.Time
		}
		info.LastTime = f.Time
	})
	info.Frames, info.ValidEnd = sc.frames, sc.validEnd
	if sc.frames > 0 {
		if f, err := frame.Decode(data); err == nil {
			if v, k, err := parseHeaderFrame(&f); err == nil {
				info.Version, info.Encrypted, info.KeyGen = v, v == VersionEncrypted, k.gen
			}
		}
	}
	if sc.bad == nil {
		return info
	}
	// A whole header frame that records another offset is no torn write
	// but a segment renamed or copied under another name: corrupt, so
	// that opening for writing does not truncate it.
	renamed := sc.validEnd == 0 && len(data) >= headerFrameLen && errors.Is(sc.bad, errOffsetMismatch)
	if last && sc.nextValid < 0 && !renamed {
		info.Torn, info.TornErr = true, sc.bad
		return info
	}
	info.Err = &CorruptionError{Segment: path, Offset: base + uint64(sc.validEnd), Err: sc.bad}
	return info
}

// holeExt names the record of a range of the log removed on purpose:
// "<from>.hole" (from in 16 hex digits, as segment names) holds the
// decimal offset where the range ends. Retention writes one before it
// removes a segment that has a kept segment before it, and Repair writes
// one to accept a gap; a gap covered by holes is not reported.
const holeExt = ".hole"

// writeHole records that [from, to) is gone on purpose. The caller syncs
// the directory.
func writeHole(dir string, from, to uint64) error {
	path := filepath.Join(dir, fmt.Sprintf("%016x%s", from, holeExt))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal: record removed range in %s: %w", path, err)
	}
	_, err = f.WriteString(strconv.FormatUint(to, 10) + "\n")
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("wal: record removed range in %s: %w", path, err)
	}
	return nil
}

// readHoles returns the recorded removed ranges of dir, start to end.
// Unreadable records are ignored: a gap they would cover is reported.
func readHoles(dir string) map[uint64]uint64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	holes := map[uint64]uint64{}
	for _, e := range ents {
		name := e.Name()
		if len(name) != 16+len(holeExt) || !strings.HasSuffix(name, holeExt) {
			continue
		}
		from, err := strconv.ParseUint(name[:16], 16, 64)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		to, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && to > from {
			holes[from] = to
		}
	}
	return holes
}

// covered reports whether recorded holes cover [from, to) end to end.
func covered(holes map[uint64]uint64, from, to uint64) bool {
	for from < to {
		end, ok := holes[from]
		if !ok {
			return false
		}
		from = end
	}
	return true
}

// findGaps returns the gaps between consecutive segments of dir that no
// recorded hole covers. Sizes must be those of complete segments.
func findGaps(dir string, segs []segment) []*GapError {
	var gaps []*GapError
	var holes map[uint64]uint64
	for i := 1; i < len(segs); i++ {
		end := segs[i-1].base + uint64(segs[i-1].size)
		if end >= segs[i].base {
			continue // contiguous, or an overlap, which is reported apart
		}
		if holes == nil {
			holes = readHoles(dir)
		}
		if covered(holes, end, segs[i].base) {
			continue
		}
		gaps = append(gaps, &GapError{Prev: filepath.Join(dir, segName(segs[i-1].base)), End: end,
			Next: filepath.Join(dir, segName(segs[i].base)), Base: segs[i].base})
	}
	return gaps
}

// gapBetween returns the error for crossing from the segment before, which
// ends at end, to the segment at base, or nil if nothing is missing.
func gapBetween(dir string, prev, end, base uint64) error {
	if end >= base || covered(readHoles(dir), end, base) {
		return nil
	}
	return &GapError{Prev: filepath.Join(dir, segName(prev)), End: end, Next: filepath.Join(dir, segName(base)), Base: base}
}

// removeHolesBefore removes hole records wholly before first, the first
// retained offset: retention removed everything before it anyway.
func removeHolesBefore(dir string, first uint64) {
	for from, to := range readHoles(dir) {
		if to <= first {
			os.Remove(filepath.Join(dir, fmt.Sprintf("%016x%s", from, holeExt)))
		}
	}
}

// Gaps returns the gaps between the segments of the log in dir that no
// retention or Repair record covers. It reads only the directory, so it
// is cheap; Check also verifies every frame.
func Gaps(dir string) ([]*GapError, error) {
	segs, err := listSegments(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	return findGaps(dir, segs), nil
}

// sealExt names the marker of a segment whose sync rotation left to the
// background: "<base>.sealing", base in 16 hex digits as in segment names.
// It is on disk before the next segment is, and removed once the segment
// is synced; Open finding it checks that the segment holds every byte up
// to the next one (see recoverSeal).
const sealExt = ".sealing"

func sealMarkerPath(dir string, base uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016x%s", base, sealExt))
}

// writeSealMarker creates the marker of the segment at base. The caller
// syncs the directory (creating the next segment does).
func writeSealMarker(dir string, base uint64) error {
	path := sealMarkerPath(dir, base)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("wal: mark segment for sealing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("wal: mark segment for sealing %s: %w", path, err)
	}
	return nil
}

// sealMarkers returns the bases of the segments of dir marked as not yet
// sealed, in order.
func sealMarkers(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []uint64
	for _, e := range ents {
		name := e.Name()
		if len(name) != 16+len(sealExt) || !strings.HasSuffix(name, sealExt) {
			continue
		}
		if base, err := strconv.ParseUint(name[:16], 16, 64); err == nil {
			bases = append(bases, base)
		}
	}
	return bases, nil
}

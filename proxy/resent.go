package proxy

import (
	"bytes"
	"hash/maphash"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/golang/snappy"
)

// An agent resends its whole conversation with every request, so by the
// late turns of a session nearly every byte of a request body was in the
// previous one. Scanning those bytes for secrets again is most of what
// the recorder spends on a request, and the request waits for it in
// lossless mode. resent remembers, per session, the segments of the
// last request body, by length and hash, and which held no secret, so
// the next request scans only the segments that are new or changed.
//
// Segments are what a stream fed segChunk bytes at a time redacts at
// once (the same redact.Cut and private-key rules as stream.chunk), so
// a body's segments depend only on its own bytes: a segment whose bytes
// hash as the remembered one's did is the same text, and redact.Bytes,
// a function of the text alone, leaves it as it did before. Redacting
// segment by segment is what a stream does with network chunks.

// The WAL stores a body frame as a snappy block, and compressing a
// 700 KB body costs more than scanning it, so a segment is also written
// as a frame of its own and its stored form (redacted, compressed) is
// kept with it: a resent segment is written again as it was, and only
// the new segments of a request are redacted and compressed.

// segChunk is the size of the chunks segments are cut from.
const segChunk = 64 << 10

// maxResent bounds the sessions remembered; past it one is forgotten.
const maxResent = 256

// maxKept bounds the bytes of stored forms kept over all sessions; past
// it sessions are forgotten.
const maxKept = 16 << 20

type segment struct {
	end int // offset of the segment's end in the body
	sum uint64
	// wsum is the hash of the window the segment was cut from (segChunk
	// bytes from its start, fewer at the body's end; wlast when the
	// window reached the end): the same window cuts the same segment,
	// so a resent one is found without running redact.Cut again.
	wsum  uint64
	wlast bool
	dirty bool // it holds a secret
	// stored is the segment as the WAL stores it: its redacted bytes,
	// as a snappy block when snappy is set. Kept only when compressed;
	// else set while the body is written.
	stored []byte
	snappy bool
}

type resent struct {
	seed     maphash.Seed
	sessions map[string][]segment
	kept     int // bytes of stored forms in sessions
	maxKept  int
	// compress keeps each segment's snappy block, for a WAL that
	// compresses frames.
	compress bool
	scratch  []byte
	// off disables the memory (tests compare with and without it).
	off bool
}

func newResent(compress bool) *resent {
	return &resent{seed: maphash.MakeSeed(), sessions: map[string][]segment{}, compress: compress, maxKept: maxKept}
}

// segments cuts body, a request of session, into segments and finds
// which hold a secret, scanning only those the session's last request
// did not have (a remembered segment keeps its stored form).
func (rs *resent) segments(session string, body []byte, red *Redactor) []segment {
	var prev []segment
	if !rs.off && session != "" {
		prev = rs.sessions[session]
	}
	var segs []segment
	for start := 0; start < len(body); {
		end := min(len(body), start+segChunk)
		data := body[start:end]
		last := end == len(body)
		wsum := maphash.Bytes(rs.seed, data)
		if i := len(segs); i < len(prev) && prev[i].wsum == wsum && prev[i].wlast == last && (i == 0 || prev[i-1].end == start) {
			// The window the last request cut this segment from: the
			// same segment, clean or not as it was.
			segs = append(segs, prev[i])
			start = prev[i].end
			continue
		}
		cut := len(data)
		if !last {
			cut = redact.Cut(data, maxHold)
			if i := redact.PEMHold(data[:cut]); i >= 0 && len(data)-i < maxPEM {
				cut = i
			}
			if cut == 0 {
				cut = len(data) // cannot happen: Cut keeps all but maxHold
			}
		}
		seg := data[:cut]
		s := segment{end: start + cut, sum: maphash.Bytes(rs.seed, seg), wsum: wsum, wlast: last}
		if i := len(segs); i < len(prev) && prev[i].end == s.end && prev[i].sum == s.sum {
			s = prev[i]
			s.wsum, s.wlast = wsum, last
		} else {
			out := red.Bytes(seg)
			s.dirty = len(out) != len(seg) || string(out) != string(seg)
		}
		segs = append(segs, s)
		start += cut
	}
	return segs
}

// remember keeps segs as session's last request, forgetting sessions
// past maxResent or maxKept.
func (rs *resent) remember(session string, segs []segment) {
	if rs.off || session == "" {
		return
	}
	rs.kept -= storedLen(rs.sessions[session])
	delete(rs.sessions, session)
	n := storedLen(segs)
	for k, v := range rs.sessions {
		if len(rs.sessions) < maxResent && rs.kept+n <= rs.maxKept {
			break
		}
		rs.kept -= storedLen(v)
		delete(rs.sessions, k)
	}
	if n > rs.maxKept {
		return
	}
	rs.sessions[session] = segs
	rs.kept += n
}

func storedLen(segs []segment) int {
	n := 0
	for _, s := range segs {
		n += len(s.stored)
	}
	return n
}

// redact calls emit with each segment of body: its redacted bytes as the
// WAL stores them (a snappy block of raw bytes when snappy is set), the
// time of the network read that completed it (marks: where each read
// ended, and when), the last one flagged. The bytes are valid until the
// next call.
func (rs *resent) redact(session string, body []byte, marks []mark, red *Redactor, emit func(t int64, stored []byte, snappyBlock bool, raw int, last bool)) {
	if len(marks) == 0 {
		return // no body
	}
	segs := rs.segments(session, body, red)
	start, mi := 0, 0
	for i := range segs {
		s := &segs[i]
		for mi < len(marks)-1 && marks[mi].end < s.end {
			mi++
		}
		var raw int
		if s.stored == nil {
			b := body[start:s.end]
			if s.dirty {
				b = red.Bytes(b)
			}
			raw = len(b)
			s.stored, s.snappy = b, false
			if rs.compress && raw >= frame.MinCompressLen {
				rs.scratch = snappy.Encode(rs.scratch[:cap(rs.scratch)], b)
				if len(rs.scratch) < raw {
					s.stored, s.snappy = bytes.Clone(rs.scratch), true
				}
			}
		} else {
			raw = snappyLen(s.stored)
		}
		emit(marks[mi].t, s.stored, s.snappy, raw, i == len(segs)-1)
		if !s.snappy {
			s.stored = nil // a slice of this body, or not worth keeping
		}
		start = s.end
	}
	rs.remember(session, segs)
}

func snappyLen(block []byte) int {
	n, _ := snappy.DecodedLen(block)
	return n
}

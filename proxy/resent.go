package proxy

import (
	"hash/maphash"

	"github.com/bbengine/bbengine/codec/redact"
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

// segChunk is the size of the chunks segments are cut from.
const segChunk = 64 << 10

// maxResent bounds the sessions remembered; past it one is forgotten.
const maxResent = 256

type segment struct {
	end   int // offset of the segment's end in the body
	sum   uint64
	dirty bool // it holds a secret
}

type resent struct {
	seed     maphash.Seed
	sessions map[string][]segment
	// off disables the memory (tests compare with and without it).
	off bool
}

func newResent() *resent {
	return &resent{seed: maphash.MakeSeed(), sessions: map[string][]segment{}}
}

// segments cuts body, a request of session, into segments and finds
// which hold a secret, scanning only those the session's last request
// did not have clean; it remembers them for the next request.
func (rs *resent) segments(session string, body []byte, red *Redactor) []segment {
	var prev []segment
	if !rs.off && session != "" {
		prev = rs.sessions[session]
	}
	var segs []segment
	for start := 0; start < len(body); {
		end := min(len(body), start+segChunk)
		data := body[start:end]
		cut := len(data)
		if end < len(body) {
			cut = redact.Cut(data, maxHold)
			if i := redact.PEMHold(data[:cut]); i >= 0 && len(data)-i < maxPEM {
				cut = i
			}
			if cut == 0 {
				cut = len(data) // cannot happen: Cut keeps all but maxHold
			}
		}
		seg := data[:cut]
		s := segment{end: start + cut, sum: maphash.Bytes(rs.seed, seg)}
		if i := len(segs); !(i < len(prev) && prev[i] == s) {
			out := red.Bytes(seg)
			s.dirty = len(out) != len(seg) || string(out) != string(seg)
		}
		segs = append(segs, s)
		start += cut
	}
	if !rs.off && session != "" {
		if _, ok := rs.sessions[session]; !ok && len(rs.sessions) >= maxResent {
			for k := range rs.sessions {
				delete(rs.sessions, k)
				break
			}
		}
		rs.sessions[session] = segs
	}
	return segs
}

// redact calls emit with the redacted bytes of body, the last call
// flagged. A body without a secret goes as its network reads came
// (marks: where each ended, and when); one with a secret goes segment by
// segment, each with the time of the read that completed it, the
// segments with a secret redacted.
func (rs *resent) redact(session string, body []byte, marks []mark, red *Redactor, emit func(t int64, b []byte, last bool)) {
	if len(marks) == 0 {
		return // no body
	}
	segs := rs.segments(session, body, red)
	dirty := false
	for _, s := range segs {
		dirty = dirty || s.dirty
	}
	if !dirty {
		prev := 0
		for i, m := range marks {
			emit(m.t, body[prev:m.end], i == len(marks)-1)
			prev = m.end
		}
		return
	}
	start, mi := 0, 0
	for i, s := range segs {
		for mi < len(marks)-1 && marks[mi].end < s.end {
			mi++
		}
		b := body[start:s.end]
		if s.dirty {
			b = red.Bytes(b)
		}
		emit(marks[mi].t, b, i == len(segs)-1)
		start = s.end
	}
}

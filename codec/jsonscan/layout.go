package jsonscan

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"unicode/utf8"
)

// A Layout remembers where a JSON object keeps one long array member (a
// request body's conversation, say) so that the next document that
// resends it can be split at memory speed (Resplit): Open is the offset
// of the array's '[', Head the hash of the document up to and including
// it, and Starts, Lens and Hashes the offset, length and hash of each
// element. A Layout is not changed once made; it may be shared between
// goroutines.
type Layout struct {
	Open         int
	Head         uint64
	Starts, Lens []int
	Hashes       []uint64
}

// NewLayout returns the layout of body, whose array opens at open and
// holds the elements at spans (as Split returns them), hashed with seed.
func NewLayout(seed maphash.Seed, body []byte, open int, spans [][2]int) *Layout {
	l := &Layout{
		Open:   open,
		Head:   maphash.Bytes(seed, body[:open+1]),
		Starts: make([]int, len(spans)),
		Lens:   make([]int, len(spans)),
		Hashes: make([]uint64, len(spans)),
	}
	for i, s := range spans {
		l.Starts[i], l.Lens[i] = s[0], s[1]-s[0]
		l.Hashes[i] = maphash.Bytes(seed, body[s[0]:s[1]])
	}
	return l
}

// Split scans the JSON object body in full for its member field, an
// array: it returns the offset of the array's '[' and the span of each
// element. It calls member, when not nil, with the name (unquoted, as
// for Fields) and raw value of every other member, in order. ok is false
// when body is not a valid object, or has no such array member, or has
// the member more than once.
func Split(body []byte, field string, member func(name, value []byte)) (open int, spans [][2]int, ok bool) {
	s := decoder(body)
	defer s.release()
	d := &s.d
	if d.PeekKind() != '{' {
		return 0, nil, false
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, nil, false
	}
	open, found := -1, 0
	for d.PeekKind() != '}' {
		k, err := d.ReadValue()
		if err != nil {
			return 0, nil, false
		}
		key := body[d.InputOffset()-int64(len(k))+1 : d.InputOffset()-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			var s string
			if err := json.Unmarshal(k, &s); err != nil {
				return 0, nil, false
			}
			key = []byte(s)
		}
		if string(key) == field {
			if found++; found > 1 {
				return 0, nil, false
			}
			if d.PeekKind() == '[' {
				// The elements, in the same pass.
				if _, err := d.ReadToken(); err != nil {
					return 0, nil, false
				}
				open = int(d.InputOffset()) - 1
				for d.PeekKind() != ']' {
					v, err := d.ReadValue()
					if err != nil {
						return 0, nil, false
					}
					end := int(d.InputOffset())
					spans = append(spans, [2]int{end - len(v), end})
				}
				if _, err := d.ReadToken(); err != nil {
					return 0, nil, false
				}
				continue
			}
		}
		v, err := d.ReadValue()
		if err != nil {
			return 0, nil, false
		}
		if string(key) != field && member != nil {
			end := d.InputOffset()
			member(key, body[end-int64(len(v)):end])
		}
	}
	if _, err := d.ReadToken(); err != nil || finish(d) != nil || open < 0 {
		return 0, nil, false
	}
	return open, spans, true
}

// Resplit does what Split does, for a body that resends the start of the
// body of one of layouts: it checks the bytes up to the array and the
// resent elements by their hashes (seed must be the one the layouts were
// made with), at memory speed, and scans as JSON only what follows them.
// The members before the array are the same bytes as in the body the
// chosen layout was made from, so member is called only for the members
// after the array. When several layouts match, the one that matches the
// most elements is used.
//
// ok is false when no layout starts the body the same way, or when what
// follows is not plainly what Split accepts (a second member field, a
// name with escapes or invalid UTF-8): the caller then calls Split.
// Whenever Resplit accepts a body, it returns what Split returns
// (FuzzResplit).
func Resplit(seed maphash.Seed, body []byte, field string, member func(name, value []byte), layouts ...*Layout) (open int, spans [][2]int, ok bool) {
	open, spans, _, _, ok = resplit(seed, body, field, member, layouts)
	return open, spans, ok
}

// ResplitLayout is Resplit that returns the layout of body, as NewLayout
// would make it, hashing only the elements that follow the resent ones,
// and the index in layouts of the layout body resends.
func ResplitLayout(seed maphash.Seed, body []byte, field string, member func(name, value []byte), layouts ...*Layout) (next *Layout, from int, ok bool) {
	open, spans, from, n, ok := resplit(seed, body, field, member, layouts)
	if !ok {
		return nil, -1, false
	}
	best := layouts[from]
	next = &Layout{
		Open:   open,
		Head:   best.Head,
		Starts: make([]int, len(spans)),
		Lens:   make([]int, len(spans)),
		Hashes: make([]uint64, len(spans)),
	}
	copy(next.Hashes, best.Hashes[:n])
	for i, s := range spans {
		next.Starts[i], next.Lens[i] = s[0], s[1]-s[0]
		if i >= n {
			next.Hashes[i] = maphash.Bytes(seed, body[s[0]:s[1]])
		}
	}
	return next, from, true
}

// resplit is Resplit, also returning the index of the layout used and
// the number of its elements body resends.
func resplit(seed maphash.Seed, body []byte, field string, member func(name, value []byte), layouts []*Layout) (open int, spans [][2]int, from, resent int, ok bool) {
	var best *Layout
	bestN := -1
	for i, l := range layouts {
		if l == nil || l.Open >= len(body) || body[l.Open] != '[' || maphash.Bytes(seed, body[:l.Open+1]) != l.Head {
			continue
		}
		n, at := 0, l.Open+1
		for n < len(l.Starts) {
			s, e := l.Starts[n], l.Starts[n]+l.Lens[n]
			if s < at || e > len(body) || !separator(body[at:s], n > 0) || maphash.Bytes(seed, body[s:e]) != l.Hashes[n] {
				break
			}
			n, at = n+1, e
		}
		if n > bestN {
			best, bestN, from = l, n, i
		}
	}
	if best == nil {
		return 0, nil, -1, 0, false
	}
	open = best.Open
	spans = make([][2]int, bestN, bestN+8)
	for i := range bestN {
		spans[i] = [2]int{best.Starts[i], best.Starts[i] + best.Lens[i]}
	}
	pos := open + 1
	if bestN > 0 {
		pos = spans[bestN-1][1]
	}
	// The rest of the array.
	for {
		pos = skipSpace(body, pos)
		if pos >= len(body) {
			return 0, nil, -1, 0, false
		}
		if body[pos] == ']' {
			pos++
			break
		}
		if len(spans) > 0 {
			if body[pos] != ',' {
				return 0, nil, -1, 0, false
			}
			pos = skipSpace(body, pos+1)
		}
		n, err := Value(body[pos:])
		if err != nil {
			return 0, nil, -1, 0, false
		}
		spans = append(spans, [2]int{pos, pos + n})
		pos += n
	}
	// The rest of the object: members, none of them the array's.
	for {
		pos = skipSpace(body, pos)
		if pos >= len(body) {
			return 0, nil, -1, 0, false
		}
		if body[pos] == '}' {
			pos++
			break
		}
		if body[pos] != ',' {
			return 0, nil, -1, 0, false
		}
		pos = skipSpace(body, pos+1)
		n, err := Value(body[pos:])
		if err != nil || body[pos] != '"' {
			return 0, nil, -1, 0, false
		}
		name := body[pos+1 : pos+n-1]
		if bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name) || string(name) == field {
			return 0, nil, -1, 0, false
		}
		pos = skipSpace(body, pos+n)
		if pos >= len(body) || body[pos] != ':' {
			return 0, nil, -1, 0, false
		}
		pos = skipSpace(body, pos+1)
		if n, err = Value(body[pos:]); err != nil {
			return 0, nil, -1, 0, false
		}
		if member != nil {
			member(name, body[pos:pos+n])
		}
		pos += n
	}
	if skipSpace(body, pos) != len(body) {
		return 0, nil, -1, 0, false
	}
	return open, spans, from, bestN, true
}

// separator reports whether b is what may stand between two elements of
// an array (white space and one comma) or, for the first, before it
// (white space).
func separator(b []byte, comma bool) bool {
	seen := false
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		case ',':
			if seen || !comma {
				return false
			}
			seen = true
		default:
			return false
		}
	}
	return seen == comma
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

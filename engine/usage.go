package engine

// The sizes of the derived state (bbengine du): the Pebble store split by
// key family, and the WAL's frames attributed to sessions.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine/schema"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// StoreGroup is one part of the Pebble store: the key families it holds
// and the bytes of its live keys and values.
type StoreGroup struct {
	// Name says what the part holds ("events", "artifacts", …).
	Name string `json:"name"`
	// Prefixes are its key ranges, by their first bytes ("e", "ip").
	Prefixes []string `json:"prefixes"`
	// Keys is how many live keys it has, and Bytes the length of those
	// keys and their values: what a scan reads, before Pebble's
	// compression, without the dead keys compaction has yet to drop.
	Keys  int64 `json:"keys"`
	Bytes int64 `json:"bytes"`
}

// storeGroups are the parts of the store du reports. Every key family
// is in exactly one.
var storeGroups = []struct {
	name   string
	ranges [][2][]byte
}{
	{"events", [][2][]byte{fam(schema.PrefixEvent)}},
	{"sessions and exchanges", [][2][]byte{fam(schema.PrefixSession), fam(schema.PrefixOrdinal),
		fam(schema.PrefixConvo), fam(schema.PrefixExchange), fam(schema.PrefixOpen),
		fam(schema.PrefixMerge), fam(schema.PrefixJoin)}},
	{"artifacts", [][2][]byte{fam(schema.PrefixArtifact)}},
	{"project index", [][2][]byte{sub(schema.PrefixIndex, schema.MemProject)}},
	{"other derived keys", [][2][]byte{
		{[]byte{schema.PrefixIndex}, []byte{schema.PrefixIndex, schema.MemProject}},
		{[]byte{schema.PrefixIndex, schema.MemProject + 1}, []byte{schema.PrefixIndex + 1}},
		fam(schema.PrefixMeta), fam(schema.PrefixImportFile), fam(schema.PrefixImportPending), fam(schema.PrefixBreaker)}},
}

func fam(p byte) [2][]byte    { return [2][]byte{{p}, {p + 1}} }
func sub(p, q byte) [2][]byte { return [2][]byte{{p, q}, {p, q + 1}} }

func rangeName(r [2][]byte) string {
	if len(r[0]) == len(r[1]) && r[1][len(r[1])-1] == r[0][len(r[0])-1]+1 {
		return string(r[0])
	}
	return fmt.Sprintf("%s..%s", r[0], r[1])
}

// StoreUsage returns the live keys and bytes of each part of the Pebble
// store, from a scan of every key and value. A key of no known family
// (none is written) counts in the last part.
func (e *Engine) StoreUsage(ctx context.Context) ([]StoreGroup, error) {
	out := make([]StoreGroup, len(storeGroups))
	for i, g := range storeGroups {
		out[i].Name = g.name
		for _, r := range g.ranges {
			out[i].Prefixes = append(out[i].Prefixes, rangeName(r))
		}
	}
	n := 0
	err := e.Dump(func(k, v []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		g := groupOf(k)
		out[g].Keys++
		out[g].Bytes += int64(len(k) + len(v))
		return nil
	})
	return out, err
}

// groupOf returns the index in storeGroups of the part that holds key.
func groupOf(key []byte) int {
	for i, g := range storeGroups {
		for _, r := range g.ranges {
			if bytes.Compare(key, r[0]) >= 0 && bytes.Compare(key, r[1]) < 0 {
				return i
			}
		}
	}
	return len(storeGroups) - 1
}

// FrameUsage is what the WAL's frames weigh, by the session they belong
// to.
type FrameUsage struct {
	// Bytes is the size of every frame the log holds (header and stored
	// payload); Frames their number.
	Bytes  int64 `json:"bytes"`
	Frames int64 `json:"frames"`
	// Sessions is the bytes of frames per session id: the frames of its
	// exchanges (by the exchange id in their header) and its import
	// frames (by the session they name).
	Sessions map[string]int64 `json:"sessions"`
	// Unattributed is the bytes of the other frames: segment headers,
	// corrections and notes, breaker and tool frames, and the frames of
	// exchanges no session was derived from (not model calls).
	Unattributed int64 `json:"unattributed"`
}

// FrameUsage reads the headers of every frame of the WAL (and the
// payloads of import frames) and adds up their sizes by session. The
// derived state should cover the WAL (CatchUp): the frames of exchanges
// not derived yet count as unattributed.
func (e *Engine) FrameUsage(ctx context.Context) (FrameUsage, error) {
	u := FrameUsage{Sessions: map[string]int64{}}
	sessionOf := map[uint64]string{}
	err := e.scan([]byte{schema.PrefixExchange}, func(k, v []byte) error {
		var x struct {
			Session string `json:"session"`
		}
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("engine: decode exchange %d: %w", schema.U64(k[1:]), err)
		}
		if x.Session != "" {
			sessionOf[schema.U64(k[1:])] = x.Session
		}
		return nil
	})
	if err != nil {
		return u, err
	}
	r := e.log.NewReader()
	defer r.Close()
	for n := 0; r.Next(); n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return u, ctx.Err()
		}
		h := r.Header()
		size := int64(h.Size())
		u.Bytes += size
		u.Frames++
		session := ""
		switch {
		case h.Kind == frame.KindImport:
			p, err := r.Payload()
			if err != nil {
				return u, fmt.Errorf("engine: WAL frame at offset %d: %w", r.Offset(), err)
			}
			if rec, err := exchange.DecodeImport(p); err == nil {
				session = rec.Session
			}
		case h.Exchange != 0:
			session = sessionOf[h.Exchange]
		}
		if session == "" {
			u.Unattributed += size
			continue
		}
		u.Sessions[session] += size
	}
	if err := r.Err(); err != nil {
		return u, fmt.Errorf("engine: read the WAL: %w", err)
	}
	return u, nil
}

// BlobRefs returns the hex digests of every blob the derived state names:
// an event's text_blob, a part's text_sha256, wherever they are stored
// (events, conversation state, artifacts). It reads every value.
func (e *Engine) BlobRefs(ctx context.Context) (map[string]bool, error) {
	refs := map[string]bool{}
	n := 0
	err := e.Dump(func(_, v []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		for _, field := range blobFields {
			for rest := v; ; {
				i := bytes.Index(rest, field)
				if i < 0 {
					break
				}
				rest = rest[i+len(field):]
				if len(rest) >= 64 && isHex(rest[:64]) {
					refs[string(rest[:64])] = true
				}
			}
		}
		return nil
	})
	return refs, err
}

// blobFields are the JSON fields whose value names a blob.
var blobFields = [][]byte{[]byte(`"text_blob":"`), []byte(`"text_sha256":"`)}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// CallUsage is the token usage of one model call, as derivation left it
// in a session's usage event: bbengine usage adds these up.
type CallUsage struct {
	// Time is the usage event's time (unix ns): the end of the response
	// for a recorded call, the time of the log line that closed it for an
	// imported one.
	Time int64 `json:"time_ns"`
	// Model is the model that served the call (the response's, else the
	// requested one); empty when neither is known.
	Model  string `json:"model,omitempty"`
	Thread int    `json:"thread"`
	Seq    uint64 `json:"seq"`
	Usage  Usage  `json:"usage"`
}

// CallUsages calls fn with every session f selects (oldest first) and the
// usage of each of its model calls, in event order. The model of a usage
// event is that of the last model call event of its thread before it.
// It decodes only the fields it needs of each event; no log is read.
func (e *Engine) CallUsages(ctx context.Context, f SessionFilter, fn func(s *Session, calls []CallUsage) error) error {
	sessions, err := e.Sessions(f)
	if err != nil {
		return err
	}
	return e.SessionCallUsages(ctx, sessions, fn)
}

// SessionCallUsages is CallUsages over the sessions given, in their
// order, as Sessions or Session returned them: it reads the events of
// those sessions alone.
func (e *Engine) SessionCallUsages(ctx context.Context, sessions []Session, fn func(s *Session, calls []CallUsage) error) error {
	var calls []CallUsage
	for i := range sessions {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &sessions[i]
		calls = calls[:0]
		model := map[int]string{}
		if s.Merged != nil {
			// A merged session counts each call once: its view pairs the
			// two records of a call.
			view, err := e.Events(s.ID, EventFilter{})
			if err != nil {
				return err
			}
			for _, ev := range view {
				switch {
				case ev.Kind == KindModelCall && ev.Call != nil:
					model[ev.Thread] = cmp.Or(ev.Call.Served, ev.Call.Model)
				case ev.Kind == KindUsage && ev.Usage != nil:
					calls = append(calls, CallUsage{Time: ev.Time, Model: model[ev.Thread], Thread: ev.Thread, Seq: ev.Seq, Usage: *ev.Usage})
				}
			}
			if err := fn(s, calls); err != nil {
				return err
			}
			continue
		}
		lo := schema.EventKey(nil, s.Ordinal, 1)
		hi := schema.AppendU64Key(nil, schema.PrefixEvent, s.Ordinal+1)
		err := e.scanRange(lo, hi, func(k, v []byte) error {
			var ev struct {
				Kind   Kind   `json:"kind"`
				Time   int64  `json:"time_ns"`
				Thread int    `json:"thread"`
				Usage  *Usage `json:"usage"`
				Call   *struct {
					Model  string `json:"model"`
					Served string `json:"served"`
				} `json:"call"`
			}
			switch {
			case bytes.Contains(v, []byte(`"kind":"model_call"`)), bytes.Contains(v, []byte(`"kind":"usage"`)):
			default:
				return nil // not a call nor its usage: skip the decode
			}
			if err := jsonv1.Unmarshal(v, &ev); err != nil {
				return fmt.Errorf("engine: decode event %d of session %s: %w", schema.U64(k[9:]), s.ID, err)
			}
			switch {
			case ev.Kind == KindModelCall && ev.Call != nil:
				model[ev.Thread] = cmp.Or(ev.Call.Served, ev.Call.Model)
			case ev.Kind == KindUsage && ev.Usage != nil:
				calls = append(calls, CallUsage{Time: ev.Time, Model: model[ev.Thread], Thread: ev.Thread, Seq: schema.U64(k[9:]), Usage: *ev.Usage})
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := fn(s, calls); err != nil {
			return err
		}
	}
	return nil
}

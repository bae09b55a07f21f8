package fuzz

import (
	"bytes"
	"testing"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/codec/frame"
)

// FuzzBBoxFrame: any input parsed as bbox, stored in canonical form as the
// payload of an import frame (compressed when that is smaller), decoded
// and parsed again gives an equal document; no step panics.
func FuzzBBoxFrame(f *testing.F) {
	f.Add([]byte("---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\nu: hi\nt:read id=c1 a.go → [ok]\n  line one\n  line two\no: id=c1 → done\n"))
	f.Add(bytes.Repeat([]byte("t:grep \"x\" → [4 files]\n"), 40))
	f.Add([]byte("\n--- \n\t\r\r"))
	f.Fuzz(func(t *testing.T, in []byte) {
		doc, err := bbox.ParseBytes(in)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := bbox.Write(&text, doc, bbox.Canonical); err != nil {
			t.Fatalf("write parsed document: %v", err)
		}
		if text.Len() > frame.MaxPayload {
			t.Skip("larger than one frame")
		}
		enc := frame.AppendFrame(nil, frame.Header{Offset: 4096, Exchange: 7, Time: 1, Kind: frame.KindImport}, text.Bytes(), true)
		fr, err := frame.Decode(enc)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if fr.Offset != 4096 || fr.Kind != frame.KindImport || fr.Exchange != 7 {
			t.Fatalf("header changed: %+v", fr.Header)
		}
		payload, err := fr.AppendPayload(nil)
		if err != nil {
			t.Fatalf("payload: %v", err)
		}
		back, err := bbox.ParseBytes(payload)
		if err != nil {
			t.Fatal(err)
		}
		if !back.Equal(doc) {
			t.Fatalf("document changed through a frame:\n%q\n%q", text.String(), payload)
		}
	})
}

package exchange

import (
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

func TestAssembler(t *testing.T) {
	start, _ := Encode(&RequestStart{RequestID: "r", SessionID: "s"})
	end, _ := Encode(&ResponseEnd{Status: 200, Complete: true})
	var a Assembler
	frames := []struct {
		h frame.Header
		p []byte
	}{
		{frame.Header{Offset: 0, Kind: frame.KindSegmentHeader}, []byte("BBWAL")},
		{frame.Header{Offset: 48, Exchange: 1, Kind: frame.KindRequestStart}, start},
		{frame.Header{Offset: 90, Exchange: 2, Kind: frame.KindRequestStart}, start},
		{frame.Header{Offset: 130, Exchange: 1, Kind: frame.KindResponseBody}, []byte("ab")},
		{frame.Header{Offset: 180, Exchange: 1, Kind: frame.KindResponseBody, Flags: frame.FlagLast}, []byte("c")},
		{frame.Header{Offset: 230, Exchange: 1, Kind: frame.KindResponseEnd}, end},
	}
	for _, f := range frames {
		if err := a.Add(f.h, f.p); err != nil {
			t.Fatal(err)
		}
	}
	xs := a.Exchanges()
	if len(xs) != 2 || xs[0].ID != 1 || xs[1].ID != 2 {
		t.Fatalf("exchanges %+v", xs)
	}
	x := xs[0]
	if string(x.ResponseBody) != "abc" || !x.ResponseLast || x.End == nil || !x.End.Complete || x.Start.SessionID != "s" || len(x.Offsets) != 4 || x.Offsets[3] != 230 {
		t.Fatalf("exchange 1: %+v", x)
	}
	if err := a.Add(frame.Header{Offset: 999, Exchange: 3, Kind: frame.KindResponseEnd}, []byte("{")); err == nil || err.Error()[:22] != "frame at offset 999 (e" {
		t.Fatalf("bad payload: %v", err)
	}
}

package exchange

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestBreakerRecord(t *testing.T) {
	b := Breaker{Op: "trip", Session: "s1", State: BreakerOpen, From: BreakerClosed, Reason: "stagnation",
		Detail: "3 stagnant calls", Until: 2, Time: 1, Source: "proxy",
		Counters: BreakerCounters{Calls: 7, SinceProgress: 3, Stagnant: 3, Tokens: 1200, CostUSD: 0.25, Run: "r1", RunCalls: 2}}
	p, err := AppendBreaker(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBreaker(p)
	if err != nil || !reflect.DeepEqual(got, b) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, c := range []struct {
		name string
		edit func(*Breaker)
		want string
	}{
		{"op", func(b *Breaker) { b.Op = "explode" }, `breaker op "explode"`},
		{"state", func(b *Breaker) { b.State = BreakerClosed }, `state "closed" after a trip`},
		{"from", func(b *Breaker) { b.From = "ajar" }, `from "ajar"`},
		{"session", func(b *Breaker) { b.Session = "" }, "session: empty"},
		{"source", func(b *Breaker) { b.Source = "cron" }, `source "cron"`},
		{"run", func(b *Breaker) { b.Counters.Run = "a\nb" }, "run:"},
		{"detail", func(b *Breaker) { b.Detail = strings.Repeat("x", MaxBreakerText+1) }, "detail: want at most"},
		{"negative", func(b *Breaker) { b.Counters.Calls = -1 }, "calls is negative"},
		{"cost", func(b *Breaker) { b.Counters.CostUSD = -0.5 }, "cost_usd is -0.5"},
	} {
		bad := b
		c.edit(&bad)
		if _, err := AppendBreaker(nil, bad); err == nil || !errors.Is(err, ErrPayload) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := DecodeBreaker([]byte(`{"op":"trip"`)); err == nil || !strings.Contains(err.Error(), "breaker record") {
		t.Errorf("truncated JSON: %v", err)
	}
	if _, err := DecodeBreaker(make([]byte, MaxBreaker+1)); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("oversized: %v", err)
	}
}

// FuzzBreaker: DecodeBreaker never panics on any payload, and whatever it
// decodes encodes again to a payload that decodes to the same record.
// Seeds are in testdata/fuzz/FuzzBreaker.
func FuzzBreaker(f *testing.F) {
	f.Fuzz(func(t *testing.T, p []byte) {
		b, err := DecodeBreaker(p)
		if err != nil {
			return
		}
		enc, err := AppendBreaker(nil, b)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", b, err)
		}
		b2, err := DecodeBreaker(enc)
		if err != nil || !reflect.DeepEqual(b2, b) {
			t.Fatalf("round trip %+v → %+v, %v", b, b2, err)
		}
	})
}

package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// readBodyUnmarshal is readBody as it was, decoding the whole body with
// encoding/json: the reference readBody must agree with.
func readBodyUnmarshal(body []byte) (string, bool) {
	var bi bodyInfo
	if json.Unmarshal(body, &bi) != nil {
		return "", false
	}
	return bi.Model, bi.Stream
}

func TestReadBodyMatchesUnmarshal(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"MODEL":"upper","Stream":true}`,
		`{"model":"a","model":"b"}`,
		`{"model":5,"stream":true}`,
		`{"model":"m","stream":"yes"}`,
		`{"model":"m","messages":[1,2,}`,
		`{"model":"m"} trailing`,
		`{"model":null,"stream":null,"metadata":null}`,
		`{"metadata":{"user_id":"x"},"metadata":{"other":1},"model":"m"}`,
		`{"mod\u0065l":"escaped"}`,
		` {"model":"spaced"} `,
	} {
		m, s, _ := readBody([]byte(body))
		wm, ws := readBodyUnmarshal([]byte(body))
		if m != wm || s != ws {
			t.Errorf("readBody(%s) = %q, %v; encoding/json gives %q, %v", body, m, s, wm, ws)
		}
	}
}

// TestBodyMemoSameAsReadBody: reading bodies with the memory of earlier
// ones gives what readBody gives, over growing conversations of two
// sessions, interleaved, with members before and after the conversation,
// a changed model, a compaction, and odd bodies.
func TestBodyMemoSameAsReadBody(t *testing.T) {
	var m bodyMemo
	type convo struct {
		pre, post string
		msgs      []string
	}
	body := func(c *convo) []byte {
		return []byte(`{` + c.pre + `"messages":[` + strings.Join(c.msgs, ",") + `]` + c.post + `}`)
	}
	a := &convo{pre: `"model":"claude-a",`, post: `,"system":"s","metadata":{"user_id":"{\"session_id\":\"11111111-2222-3333-4444-555555555555\"}"},"stream":true`}
	b := &convo{pre: `"metadata":{"user_id":"user_x_account_y_session_aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"},"Model":"claude-b",`, post: `,"stream":false`}
	n := 0
	check := func(body []byte) {
		t.Helper()
		n++
		wm, ws, wsess := readBody(body)
		gm, gs, gsess := m.read(body)
		if gm != wm || gs != ws || gsess != wsess {
			t.Fatalf("body %d %s: with memory %q %v %q; readBody %q %v %q", n, body, gm, gs, gsess, wm, ws, wsess)
		}
	}
	for i := range 60 {
		a.msgs = append(a.msgs, fmt.Sprintf(`{"role":"user","content":"step %d"}`, i))
		check(body(a))
		check(body(a)) // read twice: by the breaker, then the recorder
		if i%3 == 0 {
			b.msgs = append(b.msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","input":{"n":%d}}]}`, i))
			check(body(b))
		}
		switch i {
		case 20:
			a.pre = `"model":"claude-c",`
		case 30:
			a.msgs = a.msgs[:2] // compacted
		case 40:
			a.post += `,"stream":"no"` // a member that does not decode
		case 45:
			a.post = `,"MetaData":{"user_id":"{\"session_id\":\"66666666-2222-3333-4444-555555555555\"}"},"stream":true`
		case 50:
			a.post += `,"mod\u0065l":"escaped"`
		}
	}
	for _, s := range []string{`{"model":"m","messages":[1,2,}`, `{"model":"m","messages":[1]} trailing`, `{"model":"m","messages":[1],"messages":[2]}`, `{"input":[1],"model":"r"}`, `[]`, ``} {
		check([]byte(s))
	}
	if got := m.resent.Load(); got < int64(n)*3/4 {
		t.Errorf("%d of %d bodies read with memory, want most", got, n)
	}
}

// FuzzBodyMemo: reading a body after another with the memory of the
// first gives what readBody gives.
func FuzzBodyMemo(f *testing.F) {
	f.Add([]byte(`{"model":"a","messages":[1],"stream":true}`), []byte(`{"model":"a","messages":[1,2],"stream":false,"metadata":{"user_id":"x_session_11111111-2222-3333-4444-555555555555"}}`))
	f.Add([]byte(`{"metadata":{},"messages":[1]}`), []byte(`{"metadata":{},"messages":[1,{}],"Model":5}`))
	f.Add([]byte(`{"input":[{"a":1}],"model":"r"}`), []byte(`{"input":[{"a":1},2],"model":"s"}`))
	f.Fuzz(func(t *testing.T, prev, next []byte) {
		var m bodyMemo
		m.read(prev)
		wm, ws, wsess := readBody(next)
		gm, gs, gsess := m.read(next)
		if gm != wm || gs != ws || gsess != wsess {
			t.Fatalf("read(%q after %q) = %q %v %q; readBody %q %v %q", next, prev, gm, gs, gsess, wm, ws, wsess)
		}
	})
}

// BenchmarkReadBody measures reading model, stream and session from a
// long resent body (about 700 KB) with the memory of the last one,
// against readBody's full scan.
func BenchmarkReadBody(b *testing.B) {
	var msgs []string
	for i := range 300 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","content":%q}]}`, strings.Repeat(fmt.Sprintf("line %d of output\n", i), 130)))
	}
	mk := func(n int) []byte {
		return []byte(`{"model":"claude-sonnet-4-5","messages":[` + strings.Join(msgs[:n], ",") + `],"system":"` + strings.Repeat("You are Claude Code. ", 1000) + `","metadata":{"user_id":"{\"session_id\":\"11111111-2222-3333-4444-555555555555\"}"},"stream":true}`)
	}
	prev, body := mk(299), mk(300)
	b.Run("memo", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for range b.N {
			b.StopTimer()
			var m bodyMemo
			m.read(prev)
			b.StartTimer()
			if _, _, s := m.read(body); s == "" {
				b.Fatal("no session")
			}
		}
	})
	b.Run("baseline=readBody", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, s := readBody(body); s == "" {
				b.Fatal("no session")
			}
		}
	})
}

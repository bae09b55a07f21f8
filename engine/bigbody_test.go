package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/wal"
)

// heapPeak samples the heap while fn runs and returns its peak above
// what it was before. The heap counts garbage not yet collected too, so
// the GC runs often meanwhile: the peak is then close to the peak of
// live data, whatever the machine's speed.
func heapPeak(fn func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var (
		peak uint64
		wg   sync.WaitGroup
		stop = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			peak = max(peak, read())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	peak = max(peak, read())
	if peak < base {
		return 0
	}
	return peak - base
}

// writeBigStream appends one Anthropic exchange whose streamed response
// is one text block of about size bytes, in 64 KiB body frames generated
// as they are written (the test never holds the body). It returns the
// text's length and SHA-256.
func writeBigStream(t testing.TB, log *wal.Log, id uint64, session string, size int) (int, string) {
	t.Helper()
	enc := func(v any) []byte {
		b, err := exchange.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ts := int64(1e18)
	add := func(k frame.Kind, p []byte, last bool) {
		ts += 1e6
		if _, err := log.Append(wal.Record{Kind: k, Exchange: id, Time: ts, Payload: p, Last: last}); err != nil {
			t.Fatal(err)
		}
	}
	req := []byte(`{"model":"claude-x","max_tokens":64000,"stream":true,"messages":[{"role":"user","content":"Write a very long answer."}]}`)
	add(frame.KindRequestStart, enc(&exchange.RequestStart{RequestID: "req_big", Method: "POST", Path: "/v1/messages",
		Headers: exchange.Headers{"User-Agent": {"claude-cli/2.1.330 (external, cli)"}}, Provider: "anthropic",
		SessionID: session, SessionSource: "x-bb-session-id", Stream: true, BodyBytes: int64(len(req)), Mode: "lossless", Time: ts}), false)
	add(frame.KindRequestBody, req, true)
	add(frame.KindResponseStart, enc(&exchange.ResponseStart{Status: 200, Headers: exchange.Headers{"Content-Type": {"text/event-stream"}}}), false)
	h := sha256.New()
	var (
		chunk bytes.Buffer
		textN int
		total int
	)
	chunk.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_big\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":9}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := 0; total < size; i++ {
		text := fmt.Sprintf("line %d of a very long answer that the recorder keeps whole. ", i) + strings.Repeat("x", 900)
		h.Write([]byte(text))
		textN += len(text)
		fmt.Fprintf(&chunk, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
		if chunk.Len() >= 64<<10 {
			total += chunk.Len()
			add(frame.KindResponseBody, chunk.Bytes(), false)
			chunk.Reset()
		}
	}
	chunk.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	total += chunk.Len()
	add(frame.KindResponseBody, chunk.Bytes(), true)
	add(frame.KindResponseEnd, enc(&exchange.ResponseEnd{Status: 200, Duration: 1e9, RequestBytes: int64(len(req)), ResponseBytes: int64(total), Complete: true, SessionID: session}), false)
	return textN, hex.EncodeToString(h.Sum(nil))
}

// TestBigStreamBoundedMemory: deriving one very large streamed response
// holds a bounded amount of memory, not the body: the canonicalizer
// decodes its frames as it reads them and streams the long text into
// the blob store. The event keeps the first TextLimit bytes and names
// the blob, which holds the whole text.
func TestBigStreamBoundedMemory(t *testing.T) {
	size := 64 << 20
	if testing.Short() {
		size = 24 << 20
	}
	dir, log := newData(t)
	textN, sum := writeBigStream(t, log, 1, "big", size)
	e := open(t, dir, log, nil)
	var p Progress
	grew := heapPeak(func() {
		var err error
		if p, err = e.CatchUp(context.Background()); err != nil {
			t.Error(err)
		}
	})
	const bound = 32 << 20
	t.Logf("a %d MiB stream: the live heap grew by at most %.1f MiB while it was derived", size>>20, float64(grew)/(1<<20))
	if grew > bound {
		t.Errorf("deriving a %d MiB stream grew the live heap by %.1f MiB, want at most %d MiB", size>>20, float64(grew)/(1<<20), bound>>20)
	}
	if p.Exchanges != 1 {
		t.Fatalf("progress %+v", p)
	}
	evs, err := e.Events("big", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var msg *Event
	for i := range evs {
		if evs[i].Kind == KindMessage && evs[i].Role == "assistant" {
			msg = &evs[i]
		}
	}
	if msg == nil {
		t.Fatalf("no assistant message in %d events", len(evs))
	}
	if msg.TextBytes != int64(textN) || msg.TextBlob != sum || len(msg.Text) != 1<<20 || !strings.HasPrefix(msg.Text, "line 0 of") {
		t.Errorf("message: %d bytes of text, text_bytes %d, blob %s; want 1 MiB of %d, blob %s", len(msg.Text), msg.TextBytes, msg.TextBlob, textN, sum)
	}
	fi, err := os.Stat(NewBlobs(dir).Path(sum))
	if err != nil || fi.Size() != int64(textN) {
		t.Errorf("blob: %v, %v", fi, err)
	}
}

// TestLongTextsSpill: with a small TextLimit, a long streamed answer and
// a long prompt are kept as blobs; the next request that sends the answer
// back continues the conversation (no rewrite); bbox/1 shows the blob
// references; a rebuild derives the same state.
func TestLongTextsSpill(t *testing.T) {
	dir, log := newData(t)
	var c clock
	cv := &conversation{session: "s", system: "sys", model: "claude-x"}
	prompt := "Summarize: " + strings.Repeat("log line\n", 40)
	cv.user(prompt)
	answer := "  " + strings.Repeat("The answer goes on. ", 20) + "\n"
	r1 := anthropicReply{text: answer, in: 10, out: 5}
	x1 := fx{session: "s", req: cv.request(), resp: r1.stream(cv.model), chunks: 7}
	cv.assistant(r1)
	cv.user("thanks")
	r2 := anthropicReply{text: "You are welcome.", in: 11, out: 3}
	x2 := fx{session: "s", req: cv.request(), resp: r2.stream(cv.model)}
	writeWAL(t, log, &c, 0, []fx{x1, x2})
	e := open(t, dir, log, &Options{TextLimit: 64})
	catchUp(t, e)
	evs, err := e.Events("s", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, ev := range evs {
		kinds = append(kinds, string(ev.Kind))
		if len(ev.Text) > 64 {
			t.Errorf("%s event holds %d bytes of text, over the limit of 64", ev.Kind, len(ev.Text))
		}
		if ev.TextBlob == "" {
			continue
		}
		b, err := NewBlobs(dir).Get(ev.TextBlob)
		if err != nil || int64(len(b)) != ev.TextBytes || !strings.HasPrefix(string(b), ev.Text) {
			t.Errorf("%s event's blob %s: %d bytes, %v", ev.Kind, ev.TextBlob, len(b), err)
		}
		switch string(b) {
		case prompt, answer:
		default:
			t.Errorf("%s event's blob holds %q", ev.Kind, b)
		}
	}
	if got := strings.Join(kinds, " "); strings.Contains(got, "rewrite") || strings.Count(got, "message") != 4 {
		t.Errorf("kinds %s: want 4 messages and no rewrite", got)
	}
	// Formats without blob references say where the rest of a text is
	// (package export renders the blob references: TestBBoxBlobTexts).
	marked := MarkBlobTexts(evs)
	n := 0
	for _, ev := range marked {
		n += strings.Count(ev.Text, " bytes in all: blob sha256=")
	}
	if n != 2 {
		t.Errorf("MarkBlobTexts marks %d texts as blobs, want 2", n)
	}
	if evs[1].Text != derive.CutText(prompt, 64) {
		t.Errorf("MarkBlobTexts changed its argument: %q", evs[1].Text)
	}
	sameAfterRebuild(t, e, dump(t, e), "spilled texts")
}

// TestBigRequestBoundedMemory: deriving a request of one very long
// prompt holds the body once and little more: the decoder aliases the
// body instead of copying each level of nesting and unquotes the prompt
// in pieces into the blob store, keeping TextLimit bytes of it for the
// event.
func TestBigRequestBoundedMemory(t *testing.T) {
	size := 32 << 20
	if testing.Short() {
		size = 12 << 20
	}
	dir, log := newData(t)
	var c clock
	line := "2026-11-25T07:00:00Z worker 17 processed job 4242 in 12ms, queue depth 3\n"
	prompt := "Summarize: " + strings.Repeat(line, size/len(line))
	cv := &conversation{session: "s", system: "sys", model: "claude-x"}
	cv.user(prompt)
	r1 := anthropicReply{text: "ok", in: 10, out: 5}
	writeWAL(t, log, &c, 0, []fx{{session: "s", req: cv.request(), resp: r1.stream(cv.model)}})
	sum := sha256.Sum256([]byte(prompt))
	want := hex.EncodeToString(sum[:])
	cv, prompt = nil, ""
	e := open(t, dir, log, nil)
	grew := heapPeak(func() {
		if _, err := e.CatchUp(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Logf("a %d MiB request: the live heap grew by at most %.1f MiB while it was derived", size>>20, float64(grew)/(1<<20))
	if bound := uint64(size)*2 + 16<<20; grew > bound {
		t.Errorf("deriving a %d MiB request grew the live heap by %.1f MiB, want at most %d MiB", size>>20, float64(grew)/(1<<20), bound>>20)
	}
	evs, err := e.Events("s", EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 2 || evs[1].Kind != KindMessage || evs[1].TextBlob != want || len(evs[1].Text) != 1<<20 {
		t.Fatalf("events %d; the prompt's: %s, blob %s, %d bytes of text", len(evs), evs[1].Kind, evs[1].TextBlob, len(evs[1].Text))
	}
}

// TestDeferredRequestBodies: request bodies too large to gather while
// their exchange is open are read from the WAL again when it ends, frames
// of other exchanges in between; what is derived is byte-identical to
// gathering them.
func TestDeferredRequestBodies(t *testing.T) {
	dir, log := newData(t)
	var c clock
	defer func(n int64) { derive.DeferRequestBodies = n }(derive.DeferRequestBodies)
	derive.DeferRequestBodies = 2 << 10
	e := open(t, dir, log, &Options{TextLimit: 400})
	interleaveWAL(t, log, &c, 0, wildSession("da", 30, 3), wildSession("db", 25, 4))
	// The bodies of most exchanges are deferred.
	a := exchange.Assembler{SkipResponseBodies: true, DeferRequestBodies: derive.DeferRequestBodies}
	r := log.NewReader()
	for r.Next() {
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		a.Add(r.Header(), p)
	}
	r.Close()
	n := 0
	for _, x := range a.Exchanges() {
		if x.RequestDeferred {
			n++
		}
	}
	if n < len(a.Exchanges())/2 {
		t.Fatalf("%d of %d request bodies deferred", n, len(a.Exchanges()))
	}
	catchUp(t, e)
	deferred := dump(t, e)
	derive.DeferRequestBodies = 0
	sameAfterRebuild(t, e, deferred, "deriving deferred request bodies differs from gathering them")
	if !strings.Contains(deferred, "da") || strings.Contains(deferred, "request body:") {
		t.Fatalf("derived state: %.400s", deferred)
	}
}

package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/bodybuf"
	"github.com/bbengine/bbengine/wal"
)

// BenchmarkRecordSmall measures what the recorder does on a small
// exchange's path, as bench/cmd/proxybench's json case sends it (a
// 150-byte request with no session id, a 1.4 KB JSON reply with
// Content-Length): the frames made and written from the handler's
// goroutine when the reply's last byte came (recorder.send), and what
// the handler does after the client has it. No HTTP: the exchange is
// fed to the recorder as ServeHTTP and teeBody feed it.
func BenchmarkRecordSmall(b *testing.B) {
	b.Cleanup(func(old bool) func() { return func() { bodybuf.SetScribble(old) } }(bodybuf.SetScribble(false)))
	log, err := wal.Open(b.TempDir(), &wal.Options{Sync: wal.SyncInterval})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	p, err := New(log, &Options{Logf: func(string, ...any) {}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":false,"messages":[{"role":"user","content":"Summarise proxy/proxy.go in one paragraph."}]}`)
	reply := []byte(`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` +
		strings.Repeat("The proxy forwards each request and records it. ", 24) +
		`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":310}}`)
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
	for k, v := range map[string]string{"Content-Type": "application/json", "Anthropic-Version": "2023-06-01",
		"X-Api-Key": "sk-ant-api03-" + strings.Repeat("x", 90), "User-Agent": "bench/1.0", "Accept": "application/json",
		"Accept-Encoding": "identity", "Content-Length": "150"} {
		req.Header.Set(k, v)
	}
	respHeader := http.Header{"Content-Type": {"application/json"}, "Request-Id": {"req_01"}, "Date": {"Thu, 27 Nov 2026 12:00:00 GMT"}}
	route, _ := p.Route(req)
	one := func() {
		x := &exch{id: p.nextEx.Add(1), requestID: newID("req_"), route: route, arrived: time.Now(), req: req, header: req.Header.Clone()}
		x.holdBody()
		x.redact.r = p.red
		x.start = exchange.RequestStart{RequestID: x.requestID, Method: req.Method, Path: req.URL.Path, Proto: req.Proto,
			Provider: route.Provider, Upstream: joinURL(route.Target, route.Path), Mode: p.opts.Mode.String(),
			Redaction: exchange.RedactionVersion, Time: x.arrived.UnixNano()}
		buf := bodybuf.Get(len(body) + 1)
		x.body = append(buf, body...)
		x.pooled = x.body
		x.marks = append(x.marks, mark{end: len(body), t: time.Now().UnixNano()})
		x.start.BodyBytes = int64(len(body))
		x.reqAck = make(chan error, 1)
		p.rec.request(x, x.reqAck)
		x.status = 200
		x.sniff.sse = false
		x.holding = true
		p.rec.responseStart(x, respHeader, "HTTP/1.1")
		x.respBytes, x.chunks = int64(len(reply)), 1
		p.rec.chunk(x, frame.KindResponseBody, reply)
		p.end(x, "", true)
		if err := x.waitRecorded(); err != nil {
			b.Fatal(err)
		}
		// What the handler does once its client has the reply.
		if j := x.vouch; j != nil {
			j.vouch(x.vouchReply)
		}
		x.dropBody()
	}
	for range 200 {
		one()
	}
	b.ReportAllocs()
	for b.Loop() {
		one()
	}
}

package proxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPooledBodiesConcurrent: request bodies read into lent buffers, by
// many clients at once, sized and chunked, some cut short by the client,
// reach the upstream and the WAL each exactly as sent: no buffer is
// given back while a reader still needs it (a buffer given back is
// overwritten under test). In degrade mode the handler does not wait
// for the recorder, which holds a reference of its own.
func TestPooledBodiesConcurrent(t *testing.T) {
	for _, mode := range []Mode{Lossless, Degrade} {
		t.Run(mode.String(), func(t *testing.T) { testPooledBodies(t, mode) })
	}
}

func testPooledBodies(t *testing.T, mode Mode) {
	rg := newRig(t, &Options{Mode: mode})
	const clients, each = 6, 15
	want := map[string][]byte{} // by request marker
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 9))
			for i := range each {
				id := fmt.Sprintf("c%d-r%d", c, i)
				pad := strings.Repeat(fmt.Sprintf("%s %d ", id, r.IntN(1000)), 1+r.IntN(20000))
				body := []byte(`{"model":"claude-x","messages":[{"role":"user","content":"` + id + " " + pad + `"}]}`)
				var rd io.Reader = bytes.NewReader(body)
				chunked := i%3 == 0
				if chunked {
					rd = io.MultiReader(bytes.NewReader(body[:len(body)/2]), bytes.NewReader(body[len(body)/2:]))
				}
				req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/messages", rd)
				if chunked {
					req.ContentLength = -1
				}
				if i%7 == 6 {
					// A client that gives up at once: its body may be
					// recorded partly or whole, never another's.
					ctx, cancel := contextWithTimeout(time.Millisecond)
					req = req.WithContext(ctx)
					if resp, err := client.Do(req); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					cancel()
					continue
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				want[id] = body
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rg.up.mu.Lock()
	got := 0
	for _, b := range rg.up.bodies {
		id := idOf(b)
		if w, ok := want[id]; ok {
			got++
			if !bytes.Equal(b, w) {
				t.Errorf("%s: the upstream got another body", id)
			}
		}
	}
	rg.up.mu.Unlock()
	if got != len(want) {
		t.Fatalf("the upstream got %d of %d bodies", got, len(want))
	}
	for _, x := range rg.readWAL(t) {
		id := idOf(x.RequestBody)
		w, ok := want[id]
		if !ok {
			continue
		}
		if !bytes.Equal(x.RequestBody, w) {
			t.Errorf("%s: the WAL holds another body", id)
		}
	}
}

// idOf is the marker a test body carries after its content's quote.
func idOf(b []byte) string {
	_, rest, ok := bytes.Cut(b, []byte(`"content":"`))
	if !ok {
		return ""
	}
	id, _, _ := bytes.Cut(rest, []byte(" "))
	return string(id)
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// TestPooledBodyUpstreamAnswersEarly: an upstream that answers before it
// reads the request body, then reads it, gets the body sent or a part of
// it, never bytes of a buffer given back and lent again. (Go's transport
// finishes sending, or gives up, before the handler returns; the
// transport's own reference to the body does not rely on that.)
func TestPooledBodyUpstreamAnswersEarly(t *testing.T) {
	type seen struct {
		id   string
		body []byte
		err  error
	}
	got := make(chan seen, 16)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "2")
		io.WriteString(w, "{}")
		rc.Flush()
		// The client has its whole answer, and the proxy's transport
		// stops waiting for the body to be sent (50 ms) and moves on.
		time.Sleep(150 * time.Millisecond)
		b, err := io.ReadAll(r.Body)
		got <- seen{r.Header.Get("X-Test-Id"), b, err}
	}))
	// A small receive buffer, so that the transport is still sending
	// when the answer is complete.
	up.Listener = smallBufListener{up.Listener}
	up.Start()
	defer up.Close()
	rg := newRigWith(t, &upstream{Server: up}, &Options{MaxRequestBody: 64 << 20})
	const n = 4 << 20 // under bodybuf.MaxPooled: its buffer is lent again
	bodies := map[string][]byte{}
	for i := range 3 {
		id := fmt.Sprint("early-", i)
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + id + " " + strings.Repeat(fmt.Sprint(i), n) + `"}]}`)
		bodies[id] = body
		req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/messages", bytes.NewReader(body))
		req.Header.Set("X-Test-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		// The next request reuses the buffer this one gave back.
	}
	for range 3 {
		s := <-got
		if !bytes.HasPrefix(bodies[s.id], s.body) {
			t.Fatalf("%s: the upstream read %d bytes (then %v) that are not the body sent", s.id, len(s.body), s.err)
		}
		if s.err == nil && !bytes.Equal(s.body, bodies[s.id]) {
			t.Fatalf("%s: the upstream read %d bytes that are not the body sent", s.id, len(s.body))
		}
	}
}

type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(32 << 10)
	}
	return c, err
}

package proxy

import (
	"fmt"
	"io"
	"sync"

	"github.com/bbengine/bbengine/codec/httpbody"
)

// A compressed response is held whole until it ends, so that it can be
// scanned for secrets decoded and recorded as sent when it holds none.
// Past maxHeld compressed bytes holding it would cost too much memory:
// from there an inflater decodes the body as it streams, redacts it as a
// stream does, and the recorder writes the decoded, redacted bytes
// (ResponseEnd.Decoded), so no secret is recorded however large the
// body.

// maxInflated bounds the decoded bytes of one response an inflater
// writes: a compression bomb stops there, and the rest is not recorded
// (ResponseEnd.Unscanned says so).
const maxInflated = 1 << 30

// inflater decodes one response body on its own goroutine. The recorder
// writes compressed bytes to it and takes what it has decoded and
// redacted; Write waits until the decoder has read the bytes, so at most
// a chunk and the decoder's window are held.
type inflater struct {
	pw   *io.PipeWriter
	done chan struct{}

	mu      sync.Mutex
	out     []byte // decoded, redacted, not yet taken
	n       int64  // decoded bytes
	err     error  // why decoding stopped early
	dropped int64  // compressed bytes read after it stopped
}

func newInflater(enc string, red *Redactor) *inflater {
	pr, pw := io.Pipe()
	f := &inflater{pw: pw, done: make(chan struct{})}
	go f.run(enc, pr, red)
	return f
}

func (f *inflater) run(enc string, pr *io.PipeReader, red *Redactor) {
	defer close(f.done)
	// Bytes after the end of the compressed stream, or after decoding
	// stopped, are read and counted, so the writer never blocks.
	defer func() {
		n, _ := io.Copy(io.Discard, pr)
		f.mu.Lock()
		f.dropped += n
		f.mu.Unlock()
	}()
	s := stream{r: red}
	zr, err := httpbody.NewReader(enc, pr)
	if err != nil {
		f.stop(err)
		return
	}
	defer zr.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := zr.Read(buf)
		if n > 0 {
			out := s.chunk(buf[:n], false)
			f.mu.Lock()
			f.out = append(f.out, out...)
			f.n += int64(n)
			big := f.n > maxInflated
			f.mu.Unlock()
			if big {
				f.stop(fmt.Errorf("decoded body exceeds %d bytes", maxInflated))
				break
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			f.stop(fmt.Errorf("decoding %s: %w", enc, err))
			break
		}
	}
	out := s.chunk(nil, true)
	f.mu.Lock()
	f.out = append(f.out, out...)
	f.mu.Unlock()
}

// stop records why decoding ended early; what is written from then on
// is dropped (and counted).
func (f *inflater) stop(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

// write gives the inflater compressed bytes; it returns once they are
// read.
func (f *inflater) write(b []byte) { f.pw.Write(b) }

// take returns what is decoded and redacted so far (nil for nothing);
// the caller owns it.
func (f *inflater) take() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.out
	f.out = nil
	return out
}

// close ends the input, waits for the decoder, and returns the rest and
// why decoding stopped early, if it did (with how many compressed bytes
// were not decoded).
func (f *inflater) close() ([]byte, error) {
	f.pw.Close()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.out
	f.out = nil
	if f.err != nil {
		return out, fmt.Errorf("decoded and redacted up to byte %d of the decoded body; then %v (%d compressed bytes after that point not recorded)", f.n, f.err, f.dropped)
	}
	return out, nil
}

package httpbody

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// MaxDecoded bounds a decompressed body; a larger one (or a compression
// bomb) is an error.
const MaxDecoded = 64 << 20

// NewReader returns a reader of the body r decompressed by
// Content-Encoding enc (gzip, x-gzip, deflate, br or zstd). It reads no
// more of r than it needs; the caller bounds what it reads from it.
func NewReader(enc string, r io.Reader) (io.ReadCloser, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "gzip", "x-gzip":
		return gzip.NewReader(r)
	case "deflate":
		// HTTP's deflate is zlib; some servers send raw deflate. Peek
		// at the zlib header to choose.
		br := bufio.NewReader(r)
		if h, err := br.Peek(2); err == nil && h[0]&0x0f == 8 && h[1]&0x20 == 0 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0 {
			return zlib.NewReader(br)
		}
		return flate.NewReader(br), nil
	case "br":
		return io.NopCloser(brotli.NewReader(r)), nil
	case "zstd":
		d, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(MaxDecoded), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	default:
		return nil, fmt.Errorf("content encoding %q is not decoded", enc)
	}
}

// Decode decompresses a whole body sent with
// Content-Encoding enc (gzip, x-gzip, deflate, br or zstd; "" and
// identity return b as it is).
func Decode(enc string, b []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return b, nil
	}
	r, err := NewReader(enc, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out, err := io.ReadAll(io.LimitReader(r, MaxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", enc, err)
	}
	if len(out) > MaxDecoded {
		return nil, fmt.Errorf("%s: decoded body exceeds %d bytes", enc, MaxDecoded)
	}
	return out, nil
}

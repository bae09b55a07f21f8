// Package httpbody decodes HTTP bodies by their Content-Encoding.
package httpbody

import (
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

// Decode decompresses a whole body sent with
// Content-Encoding enc (gzip, x-gzip, deflate, br or zstd; "" and
// identity return b as it is).
func Decode(enc string, b []byte) ([]byte, error) {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return b, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		r = zr
	case "deflate":
		// HTTP's deflate is zlib; some servers send raw deflate.
		if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
			r = zr
		} else {
			r = flate.NewReader(bytes.NewReader(b))
		}
	case "br":
		r = brotli.NewReader(bytes.NewReader(b))
	case "zstd":
		d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(MaxDecoded), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		r = d
	default:
		return nil, fmt.Errorf("content encoding %q is not decoded", enc)
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", enc, err)
	}
	if len(out) > MaxDecoded {
		return nil, fmt.Errorf("%s: decoded body exceeds %d bytes", enc, MaxDecoded)
	}
	return out, nil
}

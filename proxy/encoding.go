package proxy

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

// maxDecoded bounds a decompressed response body the recorder inspects;
// a larger one (or a compression bomb) is recorded as sent, unscanned.
const maxDecoded = 64 << 20

// decodeBody decompresses a whole response body sent with
// Content-Encoding enc (gzip, x-gzip, deflate, br or zstd).
func decodeBody(enc string, b []byte) ([]byte, error) {
	var r io.Reader
	switch strings.ToLower(strings.TrimSpace(enc)) {
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
		d, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(maxDecoded), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		r = d
	default:
		return nil, fmt.Errorf("content encoding %q is not decoded", enc)
	}
	out, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", enc, err)
	}
	if len(out) > maxDecoded {
		return nil, fmt.Errorf("%s: decoded body exceeds %d bytes", enc, maxDecoded)
	}
	return out, nil
}

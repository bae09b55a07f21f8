package frame

import (
	"strconv"
	"testing"
)

func BenchmarkAppendFrame(b *testing.B) {
	for _, size := range []int{256, 4096, 65536} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = text[i%len(text)]
		}
		for _, compress := range []bool{false, true} {
			b.Run("size="+strconv.Itoa(size)+"/snappy="+strconv.FormatBool(compress), func(b *testing.B) {
				buf := make([]byte, 0, 2*size+HeaderLen)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					buf = AppendFrame(buf[:0], Header{Kind: KindResponseBody}, payload, compress)
				}
			})
			b.Run("size="+strconv.Itoa(size)+"/snappy="+strconv.FormatBool(compress)+"/enc=aes256gcm", func(b *testing.B) {
				aead := testAEAD(b)
				buf := make([]byte, 0, 2*size+HeaderLen+Overhead)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					buf = AppendEncrypted(buf[:0], Header{Kind: KindResponseBody}, payload, compress)
					Encrypt(buf, aead, testNonce)
				}
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, size := range []int{256, 4096, 65536} {
		payload := make([]byte, size)
		for i := range payload {
			payload[i] = text[i%len(text)]
		}
		for _, compress := range []bool{false, true} {
			b.Run("size="+strconv.Itoa(size)+"/snappy="+strconv.FormatBool(compress), func(b *testing.B) {
				fb := AppendFrame(nil, Header{Kind: KindResponseBody}, payload, compress)
				out := make([]byte, 0, size)
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					f, err := Decode(fb)
					if err != nil {
						b.Fatal(err)
					}
					if out, err = f.AppendPayload(out[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

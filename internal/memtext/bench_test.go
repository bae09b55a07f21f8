package memtext

import (
	"strings"
	"testing"
)

// benchProse is assistant-style prose with a few findings, code, a list
// and a log line, repeated to size.
const benchProse = `I looked at the handler and the tests first. The failure comes from the retry loop: it never resets the backoff after a success, so the third request waits far too long.

We decided to use a token bucket instead of the fixed sleep because it smooths bursts. The change is in ` + "`internal/limit/bucket.go`" + ` and the old helper is gone.

- Added ` + "`Bucket.Take`" + ` with a test for the empty bucket
- Removed the sleep from ` + "`client.Do`" + `
- TODO: benchmark the new path under contention

` + "```go\nfunc (b *Bucket) Take() bool {\n\t// must not block\n\treturn b.n.Add(-1) >= 0\n}\n```" + `

The tests pass now: 42 passed, 0 failed. Note that callers must not share a bucket across tenants. Would you like me to open a PR?
`

func BenchmarkFind(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		text := strings.Repeat(benchProse, size/len(benchProse)+1)[:size]
		b.Run("size="+sizeName(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Find(text, FindOptions{Role: "assistant", Questions: true})
			}
		})
	}
}

func BenchmarkShellWrites(b *testing.B) {
	cmd := `cd repo && FOO=1 bash -lc "sed -i 's/a/b/' main.go && go test ./... 2>&1 | tee test.log" && rm -rf build/`
	b.ReportAllocs()
	b.SetBytes(int64(len(cmd)))
	for b.Loop() {
		ShellWrites(cmd)
	}
}

func sizeName(n int) string {
	if n >= 1<<10 {
		return strings.TrimSpace(itoa(n>>10)) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

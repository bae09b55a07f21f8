package bbox

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// genDoc returns a realistic generated document of about size bytes: a
// header, then a repeating mix of messages, tool calls with ids, results
// with continuation lines, observations, metrics and comments.
func genDoc(size int) []byte {
	var b bytes.Buffer
	b.WriteString("---\nformat: bbox/1\nid: sess_bench\nrepo_sha: 7a3b2c1\nmodel: sonnet-4\n---\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "u: Please look at the billing module and fix issue %d step=%d ts=2025-12-18T03:21:08Z\n", i, 4*i)
		fmt.Fprintf(&b, "a: I'll check src/billing/mod.rs for the tier logic first. step=%d\n", 4*i+1)
		fmt.Fprintf(&b, "t:grep id=call_%d pattern=\"tier\\|plan\" path=src/billing latency_ms=12 → [12 matches]\n", i)
		fmt.Fprintf(&b, "t:read id=read_%d src/billing/mod.rs → [186 lines]\n  pub enum BillingTier { Free, Pro, Enterprise }\n  pub struct Subscription { tier: BillingTier, ... }\n", i)
		fmt.Fprintf(&b, "t!:test id=test_%d cargo test → [running]\no: id=test_%d → [ok] 128 tests passed\n", i, i)
		fmt.Fprintf(&b, "# metrics step=%d prompt_tokens=520 completion_tokens=80 cached_tokens=200 cost_usd=0.00045\n\n", 4*i+3)
	}
	return b.Bytes()
}

// BenchmarkParse reports parse throughput (MB/s) and allocations per line
// on a generated document.
func BenchmarkParse(b *testing.B) {
	for _, size := range []int{64 << 10, 8 << 20} {
		in := genDoc(size)
		lines := bytes.Count(in, []byte("\n"))
		b.Run(fmt.Sprintf("size=%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			var allocs float64
			for b.Loop() {
				s := NewScanner(bytes.NewReader(in))
				s.Header()
				for s.Scan() {
				}
				if s.Err() != nil {
					b.Fatal(s.Err())
				}
			}
			allocs = testing.AllocsPerRun(1, func() {
				s := NewScanner(bytes.NewReader(in))
				for s.Scan() {
				}
			})
			b.ReportMetric(allocs/float64(lines), "allocs/line")
		})
	}
}

// BenchmarkParseDocument includes building the Document (all lines kept).
func BenchmarkParseDocument(b *testing.B) {
	in := genDoc(8 << 20)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := ParseBytes(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	doc, _ := ParseBytes(genDoc(8 << 20))
	var out bytes.Buffer
	b.ReportAllocs()
	b.SetBytes(int64(len(genDoc(8 << 20))))
	for b.Loop() {
		out.Reset()
		if err := Write(&out, doc, Canonical); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	in := genDoc(8 << 20)
	doc, _ := ParseBytes(in)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if d := Validate(doc, "bench"); len(d) != 0 {
			b.Fatal(d[0])
		}
	}
}

func TestGenDocValid(t *testing.T) {
	doc, err := ParseBytes(genDoc(4 << 10))
	if err != nil {
		t.Fatal(err)
	}
	if d := Validate(doc, "gen"); len(d) != 0 {
		t.Fatalf("generated document has diagnostics: %v", d)
	}
	if !strings.Contains(doc.String(), "t!:test id=test_0") {
		t.Fatal("generated document misses lines")
	}
}

package memtext

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labelled is one line of testdata/labelled.jsonl: a message, who wrote
// it, and the finding types it should yield (a type twice when two
// sentences state one each).
type labelled struct {
	Text string   `json:"text"`
	Role string   `json:"role"`
	Want []string `json:"want"`
}

func readLabelled(t *testing.T, name string) []labelled {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l labelled
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLabelled measures Find against the labelled sets: labelled.jsonl,
// written before the code, and holdout.jsonl, written after it and
// measured once before any rule was changed for it (its first-run figures
// are in the commit that added it). Per type, a found type counts as a
// true positive up to the number of times the label wants it. Questions
// are asked for in assistant messages only, as the engine does for a
// task's final assistant message.
func TestLabelled(t *testing.T) {
	for _, name := range []string{"labelled", "holdout"} {
		t.Run("set="+name, func(t *testing.T) {
			set := readLabelled(t, filepath.Join("testdata", name+".jsonl"))
			if name == "labelled" && len(set) < 250 {
				t.Fatalf("labelled set has %d lines, want at least 250", len(set))
			}
			measure(t, set)
		})
	}
}

func measure(t *testing.T, set []labelled) {
	types := []Type{TypeDecision, TypeConstraint, TypeTodo, TypeFixme, TypeBlocker, TypeQuestion}
	tp, fp, fn := map[Type]int{}, map[Type]int{}, map[Type]int{}
	negatives := 0
	for n, l := range set {
		if len(l.Want) == 0 {
			negatives++
		}
		got := map[Type]int{}
		for _, f := range Find(l.Text, FindOptions{Role: l.Role, Questions: l.Role == "assistant"}) {
			got[f.Type]++
		}
		want := map[Type]int{}
		for _, w := range l.Want {
			want[Type(w)]++
		}
		for _, ty := range types {
			g, w := got[ty], want[ty]
			m := min(g, w)
			tp[ty] += m
			fp[ty] += g - m
			fn[ty] += w - m
			if g != w && testing.Verbose() {
				t.Logf("line %d: %s got %d want %d: %q", n+1, ty, g, w, l.Text)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d texts, %d negatives (%.0f%%)\n", len(set), negatives, 100*float64(negatives)/float64(len(set)))
	fmt.Fprintf(&b, "%-11s %4s %4s %4s %9s %6s\n", "type", "tp", "fp", "fn", "precision", "recall")
	fail := false
	for _, ty := range types {
		p := ratio(tp[ty], tp[ty]+fp[ty])
		r := ratio(tp[ty], tp[ty]+fn[ty])
		fmt.Fprintf(&b, "%-11s %4d %4d %4d %9.3f %6.3f\n", ty, tp[ty], fp[ty], fn[ty], p, r)
		if p < 0.9 || r < 0.8 {
			fail = true
		}
	}
	t.Log("\n" + b.String())
	if fail {
		t.Errorf("precision below 0.9 or recall below 0.8 for some type:\n%s", b.String())
	}
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

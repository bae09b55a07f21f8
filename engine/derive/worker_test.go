package derive

import (
	"strings"
	"testing"
)

// TestWorkerPanicRethrown: a worker's panic reaches the goroutine that
// waits for it, as a panic, with the worker's stack.
func TestWorkerPanicRethrown(t *testing.T) {
	done := make(chan error)
	go func() {
		var err error
		defer func() { done <- err }()
		defer catch(&err)
		panic("boom")
	}()
	err := <-done
	defer func() {
		v := recover()
		if s, ok := v.(string); !ok || !strings.Contains(s, "boom (in a derivation worker)") || !strings.Contains(s, "worker_test.go") {
			t.Fatalf("recovered %v", v)
		}
	}()
	rethrow(err)
	t.Fatal("rethrow did not panic")
}

func TestLargestFirst(t *testing.T) {
	q := newLargestFirst[string]()
	for _, j := range []struct {
		size int64
		name string
	}{{10, "a"}, {300, "b"}, {0, "c"}, {300, "d"}, {20, "e"}} {
		q.push(j.size, j.name)
	}
	var got []string
	for range 5 {
		j, ok := q.pop()
		if !ok {
			t.Fatal("pop of a queue holding jobs: false")
		}
		got = append(got, j)
	}
	if s := strings.Join(got, ""); s != "bdeac" {
		t.Fatalf("popped %s, want bdeac (largest first, ties in push order)", s)
	}
	// A waiting pop takes a job pushed later, and pops after close
	// drain what is left.
	done := make(chan string)
	go func() {
		j, _ := q.pop()
		done <- j
	}()
	q.push(1, "f")
	if j := <-done; j != "f" {
		t.Fatalf("waiting pop got %q", j)
	}
	q.push(1, "g")
	q.close()
	if j, ok := q.pop(); !ok || j != "g" {
		t.Fatalf("pop after close: %q %v, want g", j, ok)
	}
	if _, ok := q.pop(); ok {
		t.Fatal("pop of a closed, empty queue: true")
	}
}

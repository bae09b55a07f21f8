package engine

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

package wal

import (
	"context"
	"testing"
	"time"
)

// TestSeekEmptyLog: a read-only reader of a log whose writer has not
// created a segment yet can seek to 0 and then follow the writer.
func TestSeekEmptyLog(t *testing.T) {
	ro, err := Open(t.TempDir(), &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	r := ro.NewReader()
	defer r.Close()
	if err := r.Seek(0); err != nil {
		t.Fatalf("Seek(0) on an empty log: %v", err)
	}
	if r.Next() || r.Err() != nil {
		t.Fatalf("Next on an empty log: %v", r.Err())
	}
	if err := r.Seek(5); err == nil {
		t.Fatal("Seek(5) on an empty log succeeded")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Wait(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Wait on an empty log: %v", err)
	}
}

package wal_test

import (
	"testing"
	"time"

	"github.com/bbengine/bbengine/wal"
	"github.com/bbengine/bbengine/wal/walbench"
)

func TestScratchAlways(t *testing.T) {
	raw, _ := walbench.Raw(t.TempDir(), wal.SyncAlways, 4096)
	lone, _ := walbench.Lone(t.TempDir(), wal.SyncAlways, 4096, false)
	defer raw.Close()
	defer lone.Close()
	for r := 0; r < 6; r++ {
		var d [2]time.Duration
		for i, tg := range []*walbench.Target{raw, lone} {
			t0 := time.Now()
			for range 100 {
				tg.Op()
			}
			d[i] = time.Since(t0) / 100
		}
		t.Logf("raw %v wal %v", d[0], d[1])
	}
}

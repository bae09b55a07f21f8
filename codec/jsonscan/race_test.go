//go:build race

package jsonscan

// raceOn: the race detector makes sync.Pool drop items at random, so
// allocation counts are not exact under it.
const raceOn = true

//go:build !race

package jsonscan

const raceOn = false

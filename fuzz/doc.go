// Package fuzz holds cross-package fuzz harnesses: properties that span
// more than one codec, such as a bbox document surviving a trip through a
// WAL frame. Fuzz targets for a single package live beside its code.
//
// Run one with: go test -run '^$' -fuzz '^FuzzBBoxFrame$' ./fuzz
//
// It may import codec/* and wal (and any package below cli); nothing
// imports it.
package fuzz

// Package bench will hold system benchmarks that drive whole components
// (proxy against a direct connection, WAL against raw file writes) and
// print Go benchmark format. Per-package benchmarks live beside their
// code: go test -bench . ./codec/bbox ./codec/frame ./wal
package bench

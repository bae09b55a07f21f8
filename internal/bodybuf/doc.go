// Package bodybuf lends the buffers request bodies are read or gathered
// in. A long session's turn carries a 700 KB body, resent every turn and
// growing a little each time: allocating and zeroing one per turn was
// most of what the proxy process allocated. A buffer comes with a
// quarter of headroom, so one serves the turns of a growing session.
//
// In a test binary a buffer given back is overwritten, so that any
// reader that kept a part of one fails its test.
//
// It imports nothing of bbengine's, like every internal package.
package bodybuf

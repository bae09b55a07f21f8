// Package private makes and keeps files readable by their owner only.
//
// A data directory holds every prompt, response and tool output an agent
// exchanged, so it is created 0700 and every file in it 0600, whatever
// the process's umask: the modes are given at creation (a umask can only
// remove bits), never fixed afterwards, so there is no moment when a
// file is readable by others. A directory written by an older version,
// or copied with looser modes, is tightened when it is opened: Tighten
// removes the group and other bits of everything under it.
//
//	<data dir>/        0700
//	  wal/             0700   segments, LOCK, repair copies: 0600
//	  db/              0700   Pebble, through engine's vfs wrapper: 0600
//	  index/           0700   Bluge (0700/0600 by its own defaults), state: 0600
//	  blobs/sha256/ab/ 0700   blobs: 0600
//	  engine.lock, api.token, mcp.token, run.log, hooks/   0600 / 0700
//
// The functions are safe for concurrent use.
//
// It imports nothing of bbengine's, like every internal package.
package private

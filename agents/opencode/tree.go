package opencode

import (
	"path/filepath"

	"github.com/bbengine/bbengine/codec/agentlog"
)

// treeRow returns a file of the JSON tree of opencode 1.1 and earlier as
// the row it became in 1.2 (see store.go), or data itself when it is no
// file of the tree (the importer then counts it as a record that does
// not decode).
func treeRow(path string, data []byte) []byte { return data }

// treeSessionFiles returns the files of the session of path (see
// Agent.SessionFiles).
func treeSessionFiles(path string) ([]string, error) { return []string{path}, nil }

// isDocument reports whether path is a file of the JSON tree, read whole.
func isDocument(path string) bool { return filepath.Ext(path) == ".json" }

// checkDoc returns why doc is no file of the JSON tree: it must be a JSON
// object.
func checkDoc(doc []byte) error {
	_, err := agentlog.Fields(doc)
	return err
}

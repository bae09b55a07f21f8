package engine

// The query of the project index the pipeline keeps
// (engine/derive/project.go has its kinds and what they file).

import (
	"bytes"
	"encoding/binary"

	"github.com/bbengine/bbengine/engine/schema"
)

// ProjectEntry is one entry of the project index.
type ProjectEntry struct {
	Artifact string
	Ordinal  uint64 // of the artifact's session
}

// ProjectIndex returns the artifacts of project indexed under kind
// (ProjectSubject, …) and term: the active decisions about a subject,
// the open failing tests of a command, and so on. It reads only those
// entries.
func (e *Engine) ProjectIndex(project string, kind byte, term string) ([]ProjectEntry, error) {
	p := schema.ProjectPrefix(project, kind, term)
	var out []ProjectEntry
	err := e.scan(p, func(k, v []byte) error {
		id := k[len(p):]
		if bytes.IndexByte(id, 0) >= 0 || len(v) != 8 && len(v) != 16 {
			return nil
		}
		out = append(out, ProjectEntry{Artifact: string(id), Ordinal: binary.BigEndian.Uint64(v)})
		return nil
	})
	return out, err
}

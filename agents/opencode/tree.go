package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/agentlog"
)

// The JSON tree of opencode 1.1 and earlier (design section 1.2) keeps
// one pretty-printed JSON file per session, message and part under
// <data>/storage/:
//
//	session/<project id>/<session id>.json
//	message/<session id>/<message id>.json
//	part/<message id>/<part id>.json
//
// Each file is a document, read whole and again whenever it changes; the
// importer reads it as the row 1.2 made of it (treeRow). The ids come
// from the paths, not from the JSON, as opencode's own migration takes
// them ("earlier migrations may have moved sessions to new directories
// without updating the JSON"), but a part's session is its sessionID
// member (its path names only its message). session_share/ (which holds
// a secret), project/, todo/ and permission/ are never read, and a
// session file's share (its share URL), revert and permission members
// are blanked out before it is stored (cleanDoc), as the database path
// never reads those columns.

// treeKind returns what a file of the tree holds ("session", "message"
// or "part") and the id its directory names (project, session or
// message), or "" for a path that is no file of the tree.
func treeKind(path string) (kind, dir string) {
	if filepath.Ext(path) != ".json" {
		return "", ""
	}
	d := filepath.Dir(path)
	kind = filepath.Base(filepath.Dir(d))
	if filepath.Base(filepath.Dir(filepath.Dir(d))) != "storage" {
		return "", ""
	}
	switch kind {
	case "session", "message", "part":
		return kind, filepath.Base(d)
	}
	return "", ""
}

// stem returns a file's name without its extension: the id of what it
// holds.
func stem(path string) string { return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)) }

// treeDoc is the part of a file of the tree that its row's columns take.
type treeDoc struct {
	SessionID string `json:"sessionID"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
	Title     string `json:"title"`
	Version   string `json:"version"`
	Agent     string `json:"agent"`
	Time      struct {
		Created   int64 `json:"created"`
		Updated   int64 `json:"updated"`
		Completed int64 `json:"completed"`
		Start     int64 `json:"start"`
	} `json:"time"`
}

// treeRow returns a file of the JSON tree as the row it became in 1.2
// (see store.go), or data itself when it is no file of the tree or no
// JSON object (the importer then counts it as a record that does not
// decode).
func treeRow(path string, data []byte) []byte {
	kind, dir := treeKind(path)
	var d treeDoc
	if kind == "" || !isObject(data) || json.Unmarshal(data, &d) != nil {
		return data
	}
	r := map[string]any{"table": kind, "id": stem(path)}
	switch kind {
	case "session":
		r["parent_id"], r["directory"], r["title"], r["version"] = d.ParentID, d.Directory, d.Title, d.Version
		r["time_created"], r["time_updated"] = d.Time.Created, max(d.Time.Updated, d.Time.Created)
		if d.Agent != "" {
			r["agent"] = d.Agent
		}
	case "message":
		r["session_id"], r["time_created"], r["time_updated"] = dir, d.Time.Created, max(d.Time.Completed, d.Time.Created)
		r["data"] = json.RawMessage(data)
	case "part":
		r["message_id"], r["session_id"], r["time_created"] = dir, d.SessionID, d.Time.Start
		r["data"] = json.RawMessage(data)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return data
	}
	return b
}

// treeSession returns the session id of a file of the tree: a session
// file's name, a message file's directory, a part's sessionID member;
// "" for anything else.
func treeSession(path string, first []byte) string {
	kind, dir := treeKind(path)
	switch kind {
	case "session":
		return stem(path)
	case "message":
		return dir
	case "part":
		v, err := agentlog.Fields(first, "sessionID")
		if err == nil {
			return v[0]
		}
	}
	return ""
}

// treeSessionFiles returns the files of the session of path, a file of
// the tree: its session file, its messages' files and their parts'
// files, in that order, after path itself. A database, or a unit of
// one, is returned alone.
func treeSessionFiles(path string) ([]string, error) {
	kind, dir := treeKind(path)
	if kind == "" {
		return []string{path}, nil
	}
	storage := filepath.Dir(filepath.Dir(filepath.Dir(path)))
	var id string
	switch kind {
	case "session":
		id = stem(path)
	case "message":
		id = dir
	case "part":
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		id = treeSession(path, b)
	}
	if id == "" {
		return []string{path}, nil
	}
	out, _ := filepath.Glob(filepath.Join(storage, "session", "*", id+".json"))
	msgs, _ := filepath.Glob(filepath.Join(storage, "message", id, "*.json"))
	out = append(out, msgs...)
	for _, m := range msgs {
		parts, _ := filepath.Glob(filepath.Join(storage, "part", stem(m), "*.json"))
		out = append(out, parts...)
	}
	out = slices.DeleteFunc(out, func(p string) bool { return p == path })
	return append([]string{path}, out...), nil
}

// isDocument reports whether path is a file of the JSON tree, read whole.
func isDocument(path string) bool { return filepath.Ext(path) == ".json" }

// checkDoc returns why doc is no file of the JSON tree: it must be a JSON
// object.
func checkDoc(doc []byte) error {
	_, err := agentlog.Fields(doc)
	return err
}

// secretMembers are the members of a session file of the tree that are
// never stored: share holds the session's public share URL, revert and
// permission what the database path does not read either.
var secretMembers = map[string]bool{"share": true, "revert": true, "permission": true}

// cleanDoc returns doc, a file of the JSON tree, with the members of
// secretMembers of a session file blanked out (LogFormat.Clean): each
// becomes spaces, line breaks kept, so the document keeps its length and
// lines. Any other file, or one that is no JSON object, is returned as
// it is (the import then reports it).
func cleanDoc(path string, doc []byte) []byte {
	if kind, _ := treeKind(path); kind != "session" {
		return doc
	}
	var out []byte
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return doc
	}
	kept := false
	for dec.More() {
		start := dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return doc
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return doc
		}
		end := dec.InputOffset()
		if key, _ := t.(string); secretMembers[key] {
			if out == nil {
				out = bytes.Clone(doc)
			}
			if !kept {
				// The comma after a first member goes with it.
				for end < int64(len(out)) && strings.IndexByte(" \t\r\n", out[end]) >= 0 {
					end++
				}
				if end < int64(len(out)) && out[end] == ',' {
					end++
				}
			}
			for i := start; i < end; i++ {
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
			continue
		}
		kept = true
	}
	if out == nil {
		return doc
	}
	return out
}

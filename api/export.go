package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/atif"
	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/export"
)

// ExportFormats are the formats Export writes: Harbor ATIF JSON, bbox/1
// text and its compact form, the bbox JSONL alternative, Autopilot
// trajectory JSON, rlog/1 text, and json (the session and its canonical
// events).
var ExportFormats = []string{"atif", "bbox", "bbox-compact", "jsonl", "trajectory", "rlog", "json"}

// ExportRequest asks for a session written in a format (show and export).
type ExportRequest struct {
	// Session is a session id or unique prefix.
	Session string `json:"session"`
	// Format is one of ExportFormats.
	Format string `json:"format"`
	// Task keeps only the events of this task; empty keeps all.
	Task string `json:"task,omitempty"`
	// Breakers puts the session's circuit breaker records in a bbox
	// output (bbengine show does).
	Breakers bool `json:"breakers,omitempty"`
	// BlobThreshold is the size in bytes above which a bbox output goes
	// to Blobs (-1: never). The default, 0, is the export package's.
	BlobThreshold int `json:"blob_threshold,omitempty"`
	// RepoSHA is the repository commit for a bbox header.
	RepoSHA string `json:"repo_sha,omitempty"`
	// Blobs is the blob store of bbox outputs; nil keeps them inline.
	Blobs *engine.Blobs `json:"-"`
	// Raw writes the named member of a merged session as it was
	// derived (the proxied or the imported side), not the merged
	// session (show --raw).
	Raw bool `json:"raw,omitempty"`
}

// Exported is a session written in a format, with what it was written
// from.
type Exported struct {
	Session engine.Session
	Events  []engine.Event
	// Data is the output; the caller owns it.
	Data []byte
}

// Export writes a session, as s holds it, in req.Format.
func Export(s Service, req ExportRequest) (*Exported, error) {
	ses, err := s.Session(req.Session)
	if err != nil {
		return nil, err
	}
	if req.Raw && ses.Merged != nil {
		if ses, err = member(s, ses, req.Session); err != nil {
			return nil, err
		}
	}
	events, err := s.Events(ses.ID, engine.EventFilter{Task: req.Task, Raw: req.Raw})
	if err != nil {
		return nil, err
	}
	var brk []engine.BreakerRecord
	if req.Breakers && isBBox(req.Format) {
		if brk, err = s.Breakers(ses.ID); err != nil {
			return nil, err
		}
	}
	out, err := Render(&ses, events, brk, req)
	if err != nil {
		return nil, err
	}
	return &Exported{Session: ses, Events: events, Data: out}, nil
}

// member returns the summary, as derived, of the member of merged
// session ses that id names: the member itself, else the first (the
// canonical first) whose id it begins.
func member(s Service, ses engine.Session, id string) (engine.Session, error) {
	name := ses.Merged.Members[0]
	if i := slices.IndexFunc(ses.Merged.Members, func(m string) bool { return m == id }); i >= 0 {
		name = ses.Merged.Members[i]
	} else if i := slices.IndexFunc(ses.Merged.Members, func(m string) bool { return strings.HasPrefix(m, id) }); i >= 0 {
		name = ses.Merged.Members[i]
	}
	sides, err := s.Sessions(SessionsRequest{Unmerged: true})
	if err != nil {
		return ses, err
	}
	for _, m := range sides {
		if m.ID == name {
			return m, nil
		}
	}
	return ses, fmt.Errorf("%w: no member %q of merged session %s", engine.ErrNotFound, name, ses.ID)
}

func isBBox(format string) bool {
	return format == "bbox" || format == "bbox-compact" || format == "jsonl"
}

// Render writes a session s with its events (and, in bbox, its breaker
// records brk) in req.Format; req.Session is not read. It converts files
// with no data directory as well as it exports.
func Render(s *engine.Session, events []engine.Event, brk []engine.BreakerRecord, req ExportRequest) ([]byte, error) {
	var buf bytes.Buffer
	switch req.Format {
	case "bbox", "bbox-compact", "jsonl":
		doc, err := export.BBox(*s, events, &export.BBoxOptions{
			BlobThreshold: req.BlobThreshold, Blobs: req.Blobs, RepoSHA: req.RepoSHA, Task: req.Task, Breakers: brk})
		if err != nil {
			return nil, err
		}
		switch req.Format {
		case "bbox":
			err = bbox.Write(&buf, doc, bbox.Canonical)
		case "bbox-compact":
			err = bbox.Write(&buf, doc, bbox.Compact)
		default:
			err = bbox.WriteJSONL(&buf, doc)
		}
		return buf.Bytes(), err
	case "atif", "trajectory", "rlog":
		events = engine.MarkBlobTexts(events)
	}
	switch req.Format {
	case "atif":
		t, err := export.ATIF(s, events, nil)
		if err != nil {
			return nil, err
		}
		return atif.Encode(t)
	case "trajectory":
		return export.Trajectory(s, events)
	case "rlog":
		return export.RLog(s, events)
	case "json":
		if events == nil {
			events = []engine.Event{}
		}
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err := enc.Encode(struct {
			Session *engine.Session `json:"session"`
			Events  []engine.Event  `json:"events"`
		}{s, events})
		return buf.Bytes(), err
	}
	return nil, fmt.Errorf("unknown format %q", req.Format)
}

// readBack names the importer that reads a format back.
var readBack = map[string]string{"atif": "atif", "bbox": "bbox", "bbox-compact": "bbox", "jsonl": "bbox", "trajectory": "trajectory"}

// ErrNoReadBack is CheckExport's error for a format no importer reads
// (rlog, json: reports, not lossless formats).
var ErrNoReadBack = errors.New("api: the format cannot be read back")

// CheckExport reads out, an output in format, back with its format's
// importer and compares its counts with src, the counts of what it was
// written from (package census): the rows say what was lost or changed.
func CheckExport(format string, src census.Counts, out []byte) ([]census.Row, error) {
	source := readBack[format]
	if source == "" {
		return nil, ErrNoReadBack
	}
	name := "output." + format
	rec := engine.ImportRecord{Import: exchange.Import{Source: source, File: name, Kind: exchange.ImportDoc, Data: out}}
	im, err := engine.DeriveImport(source, source+":check", []engine.ImportFile{{Path: name, Records: []engine.ImportRecord{rec}}})
	if err != nil {
		return nil, err
	}
	res := engine.Census(&im.Session, im.Events)
	// Records and parse errors describe the source files, not the output.
	res.Records, res.ParseErrors = src.Records, src.ParseErrors
	return census.Compare(src, res), nil
}

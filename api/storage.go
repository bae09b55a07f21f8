package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
)

// Storage is what a data directory weighs and the removal of what nothing
// needs (bbengine du and gc). Local answers it in this process, Remote by
// asking the running proxy; OpenStorage picks one.
type Storage interface {
	// DU returns the size of the data directory per part, and the WAL's
	// frames per agent and per project.
	DU(req DURequest) (*DU, error)
	// GC removes what nothing needs, as req asks.
	GC(req GCRequest) (*GCResult, error)
}

// DURequest asks for the sizes of a data directory. It has no field yet.
type DURequest struct{}

// DU is the size of a data directory. Sizes are the bytes of the files
// (their length, not the blocks they take on disk).
type DU struct {
	Dir string `json:"dir"`
	// Total is every file under Dir.
	Total int64 `json:"total"`
	// Parts are the top-level entries: "wal" (the segments), "db" (the
	// derived state in Pebble), "index" (the search index), "blobs",
	// "snapshot" and "expired.json" (what retention kept of the WAL it
	// removed), the files bbengine keeps beside them (keys.json of an
	// encrypted directory, engine.lock, the tokens, run.log, hooks/),
	// and any other entry by its name, marked Other.
	Parts []DUPart `json:"parts"`
	// Store splits db by what it holds, and StoreMethod says how: db's
	// size is the files' (compressed tables, Pebble's own log and
	// manifest, dead keys not compacted yet), the parts' the live keys
	// and values a scan reads; StoreLive is their sum.
	Store       []engine.StoreGroup `json:"store"`
	StoreMethod string              `json:"store_method"`
	StoreLive   int64               `json:"store_live"`
	// WAL is the size of the WAL's segments, and WALFrames of the frames
	// they hold (WALFrameN of them); Derived is db, index, blobs and
	// retention's snapshot, and Ratio Derived over WAL.
	WAL       int64   `json:"wal"`
	WALFrames int64   `json:"wal_frames"`
	WALFrameN int64   `json:"wal_frame_count"`
	Derived   int64   `json:"derived"`
	Ratio     float64 `json:"ratio"`
	// Agents and Projects are the bytes of WAL frames per session, added
	// up by the session's agent (client family) and its project (working
	// directory). Unattributed is the bytes of the frames of no session
	// (segment headers, corrections, breaker frames, requests that are
	// not model calls): Unattributed plus the Agents' bytes, or the
	// Projects', is WALFrames.
	Agents       []DUShare `json:"agents"`
	Projects     []DUShare `json:"projects"`
	Unattributed int64     `json:"unattributed"`
}

// DUPart is one top-level entry of a data directory.
type DUPart struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	Files int    `json:"files"`
	// Other marks an entry bbengine does not know by name.
	Other bool `json:"other,omitempty"`
}

// DUShare is the WAL bytes of the sessions of one agent or project.
type DUShare struct {
	Name     string `json:"name"`
	Sessions int    `json:"sessions"`
	Bytes    int64  `json:"bytes"`
}

// StoreMethod says how DU splits the Pebble store.
const StoreMethod = "a scan of the live keys and values (bytes before compression)"

// knownParts are the top-level entries of a data directory bbengine owns.
var knownParts = map[string]bool{"wal": true, "db": true, "index": true, "blobs": true, "snapshot": true, "expired.json": true,
	crypt.KeysFile: true, lockFile: true, "api.token": true, "mcp.token": true, "ui.token": true, "run.log": true, "hooks": true}

// lockFile is the engine's lock file (engine.lock).
const lockFile = "engine.lock"

// GCRequest asks to remove what nothing needs. At least one kind must be
// asked for.
type GCRequest struct {
	// Retention removes the WAL segments and forgets the memory it
	// selects (see Local.Retain); a zero one removes nothing.
	Retention engine.Retention `json:"retention,omitzero"`
	// Blobs removes the blobs no event names.
	Blobs bool `json:"blobs,omitempty"`
	// DryRun reports what would go and removes nothing.
	DryRun bool `json:"dry_run,omitempty"`
}

// GCResult reports what went, or with DryRun would go.
type GCResult struct {
	DryRun bool `json:"dry_run,omitempty"`
	// Retained is retention's part (with GCRequest.Retention).
	Retained *Retained `json:"retained,omitempty"`
	// Blobs is the blob store's part (with GCRequest.Blobs).
	Blobs *engine.BlobGC `json:"blobs,omitempty"`
	// Bytes is what was (or would be) freed in all.
	Bytes int64 `json:"bytes"`
}

// DU implements Storage.
func (m *Local) DU(DURequest) (*DU, error) {
	ctx := context.Background()
	dir := m.e.Dir()
	out := &DU{Dir: dir, StoreMethod: StoreMethod, Agents: []DUShare{}, Projects: []DUShare{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("du: %w", err)
	}
	for _, d := range ents {
		p := DUPart{Name: d.Name(), Path: filepath.Join(dir, d.Name()), Other: !knownParts[d.Name()]}
		if p.Bytes, p.Files, err = treeSize(p.Path); err != nil {
			return nil, fmt.Errorf("du: %w", err)
		}
		out.Parts = append(out.Parts, p)
		out.Total += p.Bytes
		switch p.Name {
		case "wal":
			out.WAL = p.Bytes
		case "db", "index", "blobs", "snapshot":
			out.Derived += p.Bytes
		}
	}
	if out.Store, err = m.e.StoreUsage(ctx); err != nil {
		return nil, err
	}
	for _, g := range out.Store {
		out.StoreLive += g.Bytes
	}
	if out.WAL > 0 {
		out.Ratio = float64(out.Derived) / float64(out.WAL)
	}
	fu, err := m.e.FrameUsage(ctx)
	if err != nil {
		return nil, err
	}
	out.WALFrames, out.WALFrameN, out.Unattributed = fu.Bytes, fu.Frames, fu.Unattributed
	sessions, err := m.e.Sessions(engine.SessionFilter{})
	if err != nil {
		return nil, err
	}
	agents, projects := map[string]*DUShare{}, map[string]*DUShare{}
	add := func(to map[string]*DUShare, name string, n int64) {
		s := to[name]
		if s == nil {
			s = &DUShare{Name: name}
			to[name] = s
		}
		s.Sessions++
		s.Bytes += n
	}
	known := map[string]bool{}
	for i := range sessions {
		s := &sessions[i]
		known[s.ID] = true
		n := fu.Sessions[s.ID]
		add(agents, cmp.Or(s.Agent, "(unknown agent)"), n)
		add(projects, cmp.Or(engine.ProjectOf(s), "(no project)"), n)
	}
	// Frames of a session the derived state does not know (not derived
	// yet) count as unattributed, so the sums still add up.
	for id, n := range fu.Sessions {
		if !known[id] {
			out.Unattributed += n
		}
	}
	out.Agents, out.Projects = shares(agents), shares(projects)
	return out, nil
}

// shares returns the shares largest first, then by name.
func shares(m map[string]*DUShare) []DUShare {
	out := make([]DUShare, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b DUShare) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// treeSize returns the bytes and number of the regular files under path
// (path itself when it is a file). Files that vanish meanwhile (Pebble
// replacing a table, a blob written) are skipped.
func treeSize(path string) (n int64, files int, err error) {
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n += info.Size()
		files++
		return nil
	})
	return n, files, err
}

// GC implements Storage.
func (m *Local) GC(req GCRequest) (*GCResult, error) {
	if !req.Blobs && req.Retention.Off() {
		return nil, fmt.Errorf("%w: gc: say what to remove: a retention (retention: in --config, BBENGINE_RETENTION_*, --retention-*), or --blobs (the blobs no event names)", ErrBadRequest)
	}
	out := &GCResult{DryRun: req.DryRun}
	if !req.Retention.Off() {
		r, err := m.Retain(RetainRequest{Retention: req.Retention, DryRun: req.DryRun})
		if err != nil {
			return nil, err
		}
		out.Retained = r
		out.Bytes += r.Raw.Freed
	}
	if !req.Blobs {
		return out, nil
	}
	g, err := m.e.GCBlobs(context.Background(), &engine.BlobGCOptions{DryRun: req.DryRun})
	if err != nil {
		return nil, err
	}
	out.Blobs = &g
	out.Bytes += g.Bytes
	return out, nil
}

// DU implements Storage by asking the running proxy.
func (r *Remote) DU(req DURequest) (*DU, error) {
	var out DU
	ctx, cancel := context.WithTimeout(context.Background(), storageTimeout)
	defer cancel()
	if err := r.DoContext(ctx, http.MethodGet, "/v1/storage/du", url.Values{"fresh": {"1"}}, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GC implements Storage by asking the running proxy.
func (r *Remote) GC(req GCRequest) (*GCResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out GCResult
	ctx, cancel := context.WithTimeout(context.Background(), storageTimeout)
	defer cancel()
	if err := r.DoContext(ctx, http.MethodPost, "/v1/storage/gc", url.Values{"fresh": {"1"}}, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// storageTimeout bounds du and gc asked of a running proxy: both read
// every key of the store (and du every frame of the WAL).
const storageTimeout = 30 * time.Minute

// OpenStorage returns the Storage of dir: a client of the running proxy
// that owns it, or else the engine opened here, caught up with the WAL
// (with write, able to write to the WAL: gc's retention forgets memory
// by corrections there). close releases what was opened.
func OpenStorage(ctx context.Context, dir string, write bool) (s Storage, close func() error, err error) {
	if r := Dial(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	e, log, closeE, err := OpenEngine(ctx, dir, write)
	if err != nil {
		return nil, nil, err
	}
	return NewLocal(e, &LocalOptions{WAL: log}), closeE, nil
}

// Interface checks.
var (
	_ Storage = (*Remote)(nil)
	_ Storage = (*Local)(nil)
)

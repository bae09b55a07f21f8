package api

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// ImportSink is where imported records go: a local engine
// (LocalImportSink), or the running proxy that owns the data directory.
type ImportSink interface {
	// State returns what an earlier import of the file at path took, or
	// nil when none did.
	State(path string) (*engine.ImportFileState, error)
	// Append writes records to the WAL.
	Append(recs []exchange.Import) error
	// Wait returns when the engine has derived everything appended.
	Wait(ctx context.Context) error
	// Reader reads the sessions of the data directory.
	Reader() engine.Reader
	Close() error
}

// OpenImportSink returns the import sink of the data directory dir: the
// running proxy's, or the engine and WAL opened here.
func OpenImportSink(dir string) (ImportSink, error) {
	if r := Dial(dir); r != nil {
		return &remoteSink{*r}, nil
	}
	if err := SecureDataDir(dir); err != nil {
		return nil, err
	}
	keys, err := Keys(dir)
	if err != nil {
		return nil, err
	}
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{Keys: keys})
	if err != nil {
		return nil, fmt.Errorf("open the WAL for import: %w", err)
	}
	// An import writes far more than it reads back: a small block cache
	// keeps its memory small. Most of what it writes, the events of new
	// sessions, bypasses the memtables (engine.Options.MemTableSize).
	// Its artifacts, keyed by hash, land all over their key family: level
	// 0 tables are compacted four times less often (at 200 copies of the
	// golden corpus compaction wrote 1.4 GB before, 0.97 GB after).
	e, err := engine.Open(dir, &engine.Options{Keys: keys, WAL: log, CacheSize: 8 << 20, MemTableSize: memTable, L0CompactionThreshold: 16})
	if err != nil {
		log.Close()
		return nil, err
	}
	return &LocalImportSink{e: e, log: log}, nil
}

// memTable is the size of an import's memtables: a fourth of the
// engine's default, which an import does not fill (engine.Options).
const memTable = 4 << 20

// LocalImportSink imports into the engine and WAL opened here.
type LocalImportSink struct {
	e   *engine.Engine
	log *wal.Log
}

// WAL returns the log records are appended to.
func (l *LocalImportSink) WAL() *wal.Log { return l.log }

// State implements ImportSink.
func (l *LocalImportSink) State(path string) (*engine.ImportFileState, error) {
	st, ok, err := l.e.ImportState(path)
	if err != nil || !ok {
		return nil, err
	}
	return &st, nil
}

// Append implements ImportSink.
func (l *LocalImportSink) Append(recs []exchange.Import) error {
	return engine.AppendImport(l.log, recs)
}

// Wait implements ImportSink.
func (l *LocalImportSink) Wait(ctx context.Context) error {
	_, err := l.e.CatchUp(ctx)
	return err
}

// Reader implements ImportSink.
func (l *LocalImportSink) Reader() engine.Reader { return l.e }

// Close closes the engine, then the WAL.
func (l *LocalImportSink) Close() error {
	err := l.e.Close()
	if cerr := l.log.Close(); err == nil {
		err = cerr
	}
	return err
}

// remoteSink imports through the running proxy.
type remoteSink struct{ r Remote }

func (s *remoteSink) State(path string) (*engine.ImportFileState, error) {
	var out struct {
		Found bool                   `json:"found"`
		State engine.ImportFileState `json:"state"`
	}
	if err := s.r.GetJSON("/v1/imports", url.Values{"path": {path}}, &out); err != nil {
		return nil, err
	}
	if !out.Found {
		return nil, nil
	}
	return &out.State, nil
}

func (s *remoteSink) Append(recs []exchange.Import) error {
	var body []byte
	for i := range recs {
		start := len(body)
		body = append(body, make([]byte, binary.MaxVarintLen64)...)
		body = exchange.AppendImport(body[:start], &recs[i])
		payload := bytes.Clone(body[start:])
		body = binary.AppendUvarint(body[:start], uint64(len(payload)))
		body = append(body, payload...)
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.r.Addr+"/v1/imports", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.r.Token)
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("send records to the running proxy (pid %d): %w", s.r.PID, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the running proxy (pid %d) refused the records: %s %s", s.r.PID, resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

func (s *remoteSink) Wait(ctx context.Context) error {
	for {
		var out struct {
			CaughtUp bool `json:"caught_up"`
		}
		if err := s.r.GetJSON("/v1/imports/wait", nil, &out); err != nil {
			return err
		}
		if out.CaughtUp {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

func (s *remoteSink) Reader() engine.Reader { return &s.r }
func (s *remoteSink) Close() error          { return nil }

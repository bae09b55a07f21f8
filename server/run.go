package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// StartRun starts a proxy for one run of an agent (bbengine run) in this
// process, on a free loopback port, logging to <dir>/run.log, and
// returns a client of it once its query endpoint is up, and the function
// that stops it (flushing and syncing the WAL) and reports how it ended.
func StartRun(ctx context.Context, dir string, opts proxy.Options) (*api.Remote, func() error, error) {
	if _, err := private.Secure(dir); err != nil {
		return nil, nil, fmt.Errorf("run: data directory: %w", err)
	}
	logf, err := private.OpenFile(filepath.Join(dir, "run.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, nil, fmt.Errorf("run: log: %w", err)
	}
	fmt.Fprintf(logf, "--- bbengine run %s, session %s, task %s, %s\n", opts.Run, opts.Session, opts.Task, time.Now().Format(time.RFC3339))
	pctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() {
		errc <- Run(pctx, io.Discard, logf, Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval, Proxy: opts, Shutdown: 30 * time.Second}, ready)
	}()
	stop := func() error {
		cancel()
		err := <-errc
		return errors.Join(err, logf.Close())
	}
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		logf.Close()
		return nil, nil, fmt.Errorf("run: start the proxy: %w", err)
	case <-ctx.Done():
		return nil, nil, errors.Join(ctx.Err(), stop())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if r := api.Dial(dir); r != nil && r.Proxy != "" && r.PID == os.Getpid() {
			return r, stop, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, errors.Join(fmt.Errorf("run: the proxy's engine did not open within 30s (see %s)", filepath.Join(dir, "run.log")), stop())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

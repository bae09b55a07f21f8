package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

func uiCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "ui",
		Usage:     "open the web UI: sessions, timelines and raw frames in the browser",
		ArgsUsage: " ",
		Description: "Prints the URL of the web UI with a ticket (the browser swaps it for a cookie;\n" +
			"it signs in once, within 2 minutes) and opens the browser when there is one. The\n" +
			"running proxy of the data directory serves it under /_bb/ui/, live; when none runs,\n" +
			"this command serves a snapshot of it on 127.0.0.1 until Ctrl-C, holding the\n" +
			"directory meanwhile. It answers this machine only (loopback).",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "no-open", Usage: "print the URL without opening a browser"},
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:0", Usage: "loopback address of the UI's own server, when no proxy runs"},
		},
		Action: func(c *ucli.Context) error {
			if r := api.Dial(c.String("dir")); r != nil && r.Proxy != "" {
				return proxyUI(c, r)
			}
			addr, err := server.LoopbackAddr(c.String("listen"))
			if err != nil {
				return usagef("ui: --listen %v", err)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveUI(ctx, c, addr)
		},
	}
}

// proxyUI prints (and opens) the URL of the web UI the running proxy r
// serves, with a ticket.
func proxyUI(c *ucli.Context, r *api.Remote) error {
	token, _, _, err := server.BearerToken(c.String("dir"), server.UITokenFile, "")
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	addr := loopbackOf(r.Proxy)
	u := "http://" + addr + webui.Prefix + "?token=" + webui.Ticket(token, time.Now())
	fmt.Fprintln(c.App.Writer, u)
	fmt.Fprintf(c.App.ErrWriter, "bbengine ui: served by the proxy at %s (pid %d)\n", r.Proxy, r.PID)
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
			fmt.Fprintf(c.App.ErrWriter, "bbengine ui: the proxy listens on %s only, and the UI answers loopback only: start it with --listen 127.0.0.1:PORT (or 0.0.0.0:PORT) to use the UI\n", r.Proxy)
		}
	}
	openBrowser(c, u)
	return nil
}

// serveUI serves the web UI of the data directory on addr until ctx
// ends: the service of the directory (opened here, or a client of the
// process that holds it) and its WAL, read-only.
func serveUI(ctx context.Context, c *ucli.Context, addr string) error {
	log, err := openWALReadOnly(c)
	if err != nil {
		return err
	}
	defer log.Close()
	svc, closeSvc, err := openReader(c)
	if err != nil {
		return err
	}
	defer closeSvc()
	if r, ok := svc.(*api.Remote); ok && r.Proxy != "" {
		// A proxy took the directory since this command looked: it
		// serves the UI, live.
		return proxyUI(c, r)
	}
	var b [24]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	// Nothing else can write the directory this command holds: the pages
	// are a snapshot, without live updates.
	ui, err := webui.New(&webui.Options{Service: svc, WAL: log, Token: token, Snapshot: true,
		Health: func() webui.Health { return snapshotHealth(c.String("dir"), walDir(c), svc, log) }})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("ui: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: ui, ReadHeaderTimeout: 10 * time.Second}
	srv.RegisterOnShutdown(func() { ui.Close() })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	u := "http://" + ln.Addr().String() + webui.Prefix + "?token=" + webui.Ticket(token, time.Now())
	fmt.Fprintln(c.App.Writer, u)
	fmt.Fprintf(c.App.ErrWriter, "bbengine ui: no proxy runs for %s; serving a snapshot of it here until Ctrl-C (start the proxy for live pages)\n", c.String("dir"))
	openBrowser(c, u)
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("ui: serve: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// snapshotHealth is the health page of a directory no proxy runs for:
// its sizes, measured now, and how far its derived state is behind the
// WAL. Nothing records meanwhile, so there are no recording or latency
// figures, and the page says why.
func snapshotHealth(dir, walDir string, svc api.Service, log *wal.Log) webui.Health {
	now := time.Now()
	h := webui.Health{Note: "No proxy is running for " + dir + ": this is the snapshot `bbengine ui` serves while it holds the directory. " +
		"Nothing records meanwhile, so there is no recording status and no latency of the proxy to show; start `bbengine proxy` for them.",
		SizedAt: now}
	h.WALSize, h.DirSize = server.Sizes(dir, walDir)
	l, ok := svc.(*api.Local)
	if !ok {
		h.Derivation = "not read here: another process holds " + dir + " and derives it"
		return h
	}
	applied, err := l.Engine().Applied()
	if err != nil {
		h.Derivation = fmt.Sprintf("not running (no proxy); reading the derived state of %s failed: %v", dir, err)
		return h
	}
	h.Derivation = fmt.Sprintf("not running (no proxy): `bbengine ui` derived the WAL up to offset %d when it opened the directory", applied)
	if b, sec, err := server.DerivationLag(log, applied, now); err != nil {
		h.Derivation += fmt.Sprintf("; its lag could not be measured: reading the WAL in %s: %v", walDir, err)
	} else {
		h.LagKnown, h.LagBytes, h.LagSeconds = true, b, sec
	}
	return h
}

// loopbackOf returns the proxy's address with an unspecified host
// (0.0.0.0, [::]) replaced by loopback, which a browser can open.
func loopbackOf(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// openBrowser opens u in the user's browser when there is one: $BROWSER,
// else xdg-open with a display (open on macOS). It never fails: without
// a browser the printed URL is the way in.
func openBrowser(c *ucli.Context, u string) {
	if c.Bool("no-open") {
		return
	}
	var cmd *exec.Cmd
	switch b := os.Getenv("BROWSER"); {
	case b != "":
		cmd = exec.Command(b, u)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", u)
	case runtime.GOOS == "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		if p, err := exec.LookPath("xdg-open"); err == nil {
			cmd = exec.Command(p, u)
		}
	}
	if cmd == nil {
		fmt.Fprintln(c.App.ErrWriter, "bbengine ui: no browser found; open the URL above")
		return
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(c.App.ErrWriter, "bbengine ui: could not open a browser (%v); open the URL above\n", err)
		return
	}
	go cmd.Wait()
}

package api

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/bytesize"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// DoctorRequest asks for the checks of `bbengine doctor`: every agent
// found on the machine, and the data directory.
type DoctorRequest struct {
	// Dir is the data directory.
	Dir string `json:"dir"`
	// HookDir is the data directory as installed hooks pass it ("" for
	// the default), Exe the bbengine executable they run.
	HookDir string `json:"hook_dir,omitempty"`
	Exe     string `json:"exe,omitempty"`
	// Home is the user's home directory and ProjectDir the project's:
	// every agent's files are found from them and the environment.
	Home       string `json:"home"`
	ProjectDir string `json:"project_dir"`
	// Agents names the agents to check; empty checks every one.
	Agents []string `json:"agents,omitempty"`
	// Timeout bounds each probe: an agent's --version, a request to the
	// proxy. The default is 3 seconds.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// DoctorReport is what `bbengine doctor` found: one finding per check,
// the data directory's first, then each agent's in the order of their
// names.
type DoctorReport struct {
	Dir string `json:"dir"`
	// Proxy is the base URL of the proxy that owns Dir, "" when none
	// runs.
	Proxy    string           `json:"proxy,omitempty"`
	Findings []agents.Finding `json:"findings"`
	// Failed is set when a finding's severity is fail.
	Failed bool `json:"failed"`
}

// bb is the Agent of the findings about bbengine itself.
const bb = "bbengine"

// Doctor checks the agents found on the machine and the data
// directory, asking the running proxy that owns the directory when one
// does (its health, derivation lag and what it imported) and reading
// the directory here otherwise. It writes nothing: without a proxy it
// opens the derived state only when it exists, and only to read it.
func Doctor(ctx context.Context, req DoctorRequest) (*DoctorReport, error) {
	if req.Timeout <= 0 {
		req.Timeout = 3 * time.Second
	}
	d := &doctor{ctx: ctx, req: req, rep: &DoctorReport{Dir: req.Dir, Findings: []agents.Finding{}}}
	defer d.close()
	d.dataDir()
	var sel []agents.Agent
	for _, name := range req.Agents {
		a, ok := agents.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("%w: doctor: no agent %q (known: %s)", ErrBadRequest, name, strings.Join(agents.Names(), ", "))
		}
		sel = append(sel, a)
	}
	if len(sel) == 0 {
		sel = agents.All()
	}
	for _, a := range sel {
		d.agent(a)
	}
	for _, f := range d.rep.Findings {
		if f.Severity == agents.Fail {
			d.rep.Failed = true
		}
	}
	return d.rep, nil
}

// doctor is one run of Doctor.
type doctor struct {
	ctx context.Context
	req DoctorRequest
	rep *DoctorReport
	// remote is the proxy's query endpoint, e the derived state opened
	// read-only here; at most one is set, and neither when the derived
	// state cannot be read (none yet, a locked directory, a process that
	// holds the directory and serves no queries).
	remote *Remote
	e      *engine.Peek
	// peekErr says why what was read here was dropped: a process opened
	// the directory meanwhile, and serves no queries to ask instead.
	peekErr error
}

func (d *doctor) close() {
	if d.e != nil {
		d.e.Close()
	}
}

func (d *doctor) add(f agents.Finding) { d.rep.Findings = append(d.rep.Findings, f) }

func (d *doctor) finding(check string, sev agents.Severity, fix, format string, args ...any) {
	d.add(agents.Finding{Agent: bb, Check: check, Severity: sev, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// dataDir checks the data directory: size, encryption, the WAL, the
// proxy that owns it and the derivation lag.
func (d *doctor) dataDir() {
	dir := d.req.Dir
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		d.finding("data-dir", agents.Warn, "start `bbengine proxy` to record live, or run `bbengine import AGENT --all`",
			"no data directory at %s: nothing recorded yet", dir)
		return
	} else if err != nil {
		d.finding("data-dir", agents.Fail, "check the directory's permissions", "data directory %s: %v", dir, err)
		return
	}
	n, files, err := treeSize(dir)
	if err != nil {
		d.finding("data-dir", agents.Fail, "check the directory's permissions", "data directory %s: %v", dir, err)
	} else {
		d.finding("data-dir", agents.OK, "", "data directory %s: %s in %d files (`bbengine du` splits it)", dir, bytesize.Format(n), files)
	}
	h, held, err := engine.ReadHolder(dir)
	if err != nil {
		d.finding("proxy", agents.Warn, "", "read the lock file of %s: %v", dir, err)
	}
	health, healthErr := (*proxy.Health)(nil), error(nil)
	switch {
	case held && h.Proxy != "":
		d.rep.Proxy = "http://" + h.Proxy
		health, healthErr = d.health(d.rep.Proxy)
		switch {
		case healthErr != nil:
			d.finding("proxy", agents.Fail, "see the proxy's log; restart `bbengine proxy`",
				"the proxy (pid %d) that holds %s does not answer at %s: %v", h.PID, dir, d.rep.Proxy, healthErr)
		case health.Status != "ok" || (health.Derivation != "" && health.Derivation != "ok"):
			d.finding("proxy", agents.Fail, "see the proxy's log and /_bb/health",
				"the proxy (pid %d) at %s is %s (derivation: %s)%s", h.PID, d.rep.Proxy, health.Status, health.Derivation, prefixed("; WAL: ", health.WALError))
		default:
			d.finding("proxy", agents.OK, "", "the proxy (pid %d) at %s records into %s (recording %s, derivation %s)",
				h.PID, d.rep.Proxy, dir, health.Status, cmp.Or(health.Derivation, "not reported"))
		}
	case held:
		d.finding("proxy", agents.OK, "", "process %d holds %s, with no recording proxy", h.PID, dir)
	default:
		d.finding("proxy", agents.OK, "", "no proxy runs for %s", dir)
	}
	if held && h.Addr != "" {
		d.remote = &Remote{Addr: h.Addr, Token: h.Token, PID: h.PID, Proxy: h.Proxy}
	}
	d.encryption(held, h)
	end, walOK := d.wal(health)
	d.lag(health, held, end, walOK)
}

// health asks the proxy at base for /_bb/health.
func (d *doctor) health(base string) (*proxy.Health, error) {
	resp, err := d.get(base + "/_bb/health")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var h proxy.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Mode == "" {
		return nil, fmt.Errorf("%s/_bb/health answered %s, not a bbengine proxy's health", base, resp.Status)
	}
	return &h, nil
}

// get asks for u within the request's timeout.
func (d *doctor) get(u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(d.ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return (&http.Client{Timeout: d.req.Timeout}).Do(req)
}

// isProxy reports whether a bbengine proxy answers at base.
func (d *doctor) isProxy(base string) bool {
	_, err := d.health(strings.TrimRight(base, "/"))
	return err == nil
}

func (d *doctor) encryption(held bool, h engine.Holder) {
	dir := d.req.Dir
	if !crypt.Exists(dir) {
		d.finding("encryption", agents.OK, "", "%s is not encrypted (no %s)", dir, crypt.KeysFile)
		return
	}
	if held {
		d.finding("encryption", agents.OK, "", "%s is encrypted (%s); process %d holds it unlocked", dir, crypt.KeysFile, h.PID)
		return
	}
	if _, err := Keys(dir); err != nil {
		d.finding("encryption", agents.Warn,
			"set BBENGINE_PASSPHRASE or BBENGINE_AGE_IDENTITY (or keep the key in the OS keyring), or run doctor with `bbengine proxy` running",
			"%s is encrypted (%s) and locked: doctor cannot read its derived state without a secret", dir, crypt.KeysFile)
		return
	}
	d.finding("encryption", agents.OK, "", "%s is encrypted (%s); unlocked here", dir, crypt.KeysFile)
}

// wal checks every frame of the WAL (as `bbengine wal verify`), and
// returns its end offset.
func (d *doctor) wal(health *proxy.Health) (end uint64, ok bool) {
	walDir := filepath.Join(d.req.Dir, "wal")
	if _, err := os.Stat(walDir); err != nil {
		d.finding("wal", agents.OK, "", "no WAL at %s yet: nothing recorded", walDir)
		return 0, false
	}
	infos, err := wal.Check(walDir)
	if err != nil {
		d.finding("wal", agents.Fail, "check the directory's permissions", "check the WAL: %v", err)
		return 0, false
	}
	var bad []string
	frames := 0
	for _, in := range infos {
		frames += in.Frames
		if in.Gap != nil {
			bad = append(bad, in.Gap.Error())
		}
		if in.Err != nil {
			bad = append(bad, in.Err.Error())
		}
	}
	if len(infos) > 0 {
		last := infos[len(infos)-1]
		end = last.Base + uint64(last.ValidEnd)
	}
	switch {
	case len(bad) > 0:
		d.finding("wal", agents.Fail, "run `bbengine wal verify`; put back missing segments, or `bbengine wal repair` keeps copies, truncates and accepts the loss",
			"the WAL in %s is damaged: %s", walDir, strings.Join(bad, "; "))
	case health != nil && health.WALError != "":
		d.finding("wal", agents.Fail, "free disk space or fix the file system; recording resumes by itself",
			"the proxy cannot write the WAL: %s", health.WALError)
	default:
		d.finding("wal", agents.OK, "", "WAL: %d segments, %d frames, every checksum and offset matches, no segment missing", len(infos), frames)
	}
	return end, true
}

// lag reports the WAL bytes not derived yet: the running proxy's
// metrics, or the applied offset of the derived state opened here.
func (d *doctor) lag(health *proxy.Health, held bool, end uint64, walOK bool) {
	switch {
	case d.rep.Proxy != "":
		d.proxyLag(d.rep.Proxy, health)
		return
	case held || !walOK:
		return
	}
	d.peekLag(end)
}

// proxyLag reports the derivation lag the proxy at base measures.
func (d *doctor) proxyLag(base string, health *proxy.Health) {
	m, err := d.metrics(base, "bbengine_derive_lag_bytes", "bbengine_derive_lag_seconds")
	if err != nil {
		d.finding("lag", agents.Warn, "", "derivation lag: %v", err)
		return
	}
	b, s := m["bbengine_derive_lag_bytes"], m["bbengine_derive_lag_seconds"]
	if (math.IsNaN(b) || math.IsNaN(s)) && health != nil && health.Derivation == "ok" {
		d.finding("lag", agents.OK, "", "derivation runs; the proxy has not measured its lag yet (it does every second)")
		return
	}
	if math.IsNaN(b) || math.IsNaN(s) {
		d.finding("lag", agents.Warn, "wait, or see the proxy's log if it stays so",
			"the proxy's engine is not open yet (starting, or rebuilding the derived state)")
		return
	}
	if s > 60 {
		d.finding("lag", agents.Warn, "it catches up by itself; if it grows, see the proxy's log and /_bb/metrics",
			"derivation is %s (%.0f s) behind the WAL", bytesize.Format(int64(b)), s)
		return
	}
	d.finding("lag", agents.OK, "", "derivation is %s behind the WAL (%.0f s)", bytesize.Format(int64(b)), s)
}

// peekLag reports the derivation lag of the derived state read here,
// with no process holding the directory.
func (d *doctor) peekLag(end uint64) {
	dir := d.req.Dir
	notYet := func() {
		d.finding("lag", agents.Warn, "run `bbengine sessions` (or start `bbengine proxy`) to derive it",
			"nothing is derived yet: %s of WAL waits", bytesize.Format(int64(end)))
	}
	if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
		notYet()
		return
	}
	keys, err := Keys(dir)
	if err != nil {
		return // said under encryption
	}
	e, err := engine.OpenPeek(dir, keys)
	if errors.Is(err, fs.ErrNotExist) {
		notYet()
		return
	}
	if errors.Is(err, engine.ErrLocked) {
		d.busy(err)
		return
	}
	if err != nil {
		d.finding("lag", agents.Warn, "", "open the derived state of %s: %v", dir, err)
		return
	}
	d.e = e
	if peekHook != nil {
		peekHook()
	}
	applied, err := e.Applied()
	if errors.Is(err, engine.ErrLocked) {
		d.busy(err)
		return
	}
	if err != nil {
		// Not a verdict on the store: a read of a directory no process
		// holds fails for a cause doctor cannot tell (a process that
		// opened and closed it meanwhile, a file system error).
		d.finding("lag", agents.Warn, "run `bbengine doctor` again; if it says so again, run `bbengine wal verify` and see the file system's health",
			"read the derived state of %s: %v", dir, err)
		return
	}
	if applied >= end {
		d.finding("lag", agents.OK, "", "derivation has caught up with the WAL (offset %d)", applied)
		return
	}
	d.finding("lag", agents.Warn, "the next command that reads the directory (`bbengine sessions`) or `bbengine proxy` derives it",
		"derivation is %s behind the WAL (applied offset %d, WAL end %d)", bytesize.Format(int64(end-applied)), applied, end)
}

// peekHook, when set (by tests), runs between opening the derived state
// here and reading it: where another process may open the directory.
var peekHook func()

// busy reports that a process opened the data directory while doctor
// read its derived state (err, a *engine.LockedError): what was read may
// lag behind that process, so it is dropped. The derived state is then
// asked of the holder when it serves queries (its proxy for the lag,
// its query endpoint for what was imported); else doctor says to run
// again.
func (d *doctor) busy(err error) {
	if d.e != nil {
		d.e.Close()
		d.e = nil
	}
	d.peekErr = fmt.Errorf("process %d opened %s while doctor read it; run `bbengine doctor` again", lockPID(err), d.req.Dir)
	h, held, _ := engine.ReadHolder(d.req.Dir)
	if !held {
		h.PID = lockPID(err)
	}
	if held && h.Addr != "" && d.remote == nil {
		d.remote = &Remote{Addr: h.Addr, Token: h.Token, PID: h.PID, Proxy: h.Proxy}
	}
	if held && h.Proxy != "" {
		base := "http://" + h.Proxy
		if health, err := d.health(base); err == nil {
			d.proxyLag(base, health)
			return
		}
	}
	d.finding("lag", agents.Warn, "run `bbengine doctor` again",
		"process %d opened %s while doctor read it; the derived state is busy, its lag not measured", h.PID, d.req.Dir)
}

// metrics scrapes the proxy's /_bb/metrics for the gauges named.
func (d *doctor) metrics(base string, names ...string) (map[string]float64, error) {
	resp, err := d.get(base + "/_bb/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/_bb/metrics answered %s", base, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for _, n := range names {
			if name == n {
				out[n], _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("%s/_bb/metrics has no %s", base, n)
		}
	}
	return out, nil
}

// agent runs the agent's own checks, when it is a Doctor, and the one
// every agent shares: its logs and how many are not imported yet.
func (d *doctor) agent(a agents.Agent) {
	files, _ := SourceFiles(a.Name(), a.LogDirs(d.req.Home), true)
	env := &agents.DoctorEnv{Home: d.req.Home, ProjectDir: d.req.ProjectDir, Exe: d.req.Exe, Dir: d.req.HookDir,
		Proxy: d.rep.Proxy, IsProxy: d.isProxy, Logs: len(files), Now: time.Now(), Timeout: d.req.Timeout}
	known := d.remote != nil || d.e != nil || d.peekErr != nil
	var stateErr error
	for _, p := range files {
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		done := info.Size() == 0 // nothing to import, and no state is kept of it
		switch {
		case !done && known && stateErr == nil && engine.IsRows(a.Name(), p):
			// A database: imported when no row is new since the
			// marks of its sessions (the read stops at the first).
			_, err := engine.ScanRows(d.ctx, a.Name(), p, d.importState, func([]exchange.Import) error { return errNewRows })
			done = err == nil
			if err != nil && !errors.Is(err, errNewRows) {
				stateErr = err
			}
		case !done && known && stateErr == nil:
			var st *engine.ImportFileState
			st, stateErr = d.importState(strings.TrimSuffix(p, ".zst"))
			done = st != nil && (strings.HasSuffix(p, ".zst") || st.End >= info.Size())
		}
		if !done {
			env.Unimported++
			if env.Oldest.IsZero() || info.ModTime().Before(env.Oldest) {
				env.Oldest = info.ModTime()
			}
		}
	}
	if doc, ok := a.(agents.Doctor); ok {
		fs := doc.Doctor(env)
		for _, f := range fs {
			d.add(f)
		}
		if len(fs) == 1 && fs[0].Check == "found" && len(files) == 0 {
			return
		}
	} else if len(files) == 0 {
		return
	}
	f := agents.Finding{Agent: a.Name(), Check: "logs"}
	dirs := strings.Join(a.LogDirs(d.req.Home), ", ")
	age := func() int { return int(env.Now.Sub(env.Oldest).Hours() / 24) }
	switch {
	case len(files) == 0:
		f.Severity, f.Message = agents.OK, fmt.Sprintf("no logs in %s", dirs)
	case stateErr != nil:
		f.Severity, f.Message = agents.Warn, fmt.Sprintf("%d logs in %s; what was imported cannot be read: %v", len(files), dirs, stateErr)
	case !known:
		f.Severity = agents.Warn
		f.Message = fmt.Sprintf("%d logs in %s, the oldest last changed %d days ago; none is known to be imported (no derived state of %s to compare with)", len(files), dirs, age(), d.req.Dir)
		f.Fix = fmt.Sprintf("run `bbengine import %s --all`", a.Name())
	case env.Unimported > 0:
		f.Severity = agents.Warn
		f.Message = fmt.Sprintf("%d of %d logs in %s are not imported (or only in part), the oldest last changed %d days ago", env.Unimported, len(files), dirs, age())
		f.Fix = fmt.Sprintf("run `bbengine import %s --all` (or keep `bbengine import %s --all --follow` running)", a.Name(), a.Name())
	default:
		f.Severity, f.Message = agents.OK, fmt.Sprintf("all %d logs in %s are imported", len(files), dirs)
	}
	d.add(f)
}

// importState returns what was imported of the file at path, nil when
// nothing was.
// errNewRows stops doctor's read of a database at its first new row.
var errNewRows = errors.New("a row not imported yet")

func (d *doctor) importState(path string) (*engine.ImportFileState, error) {
	if d.remote != nil {
		return (&remoteSink{*d.remote}).State(path)
	}
	if d.e == nil {
		return nil, d.peekErr
	}
	st, ok, err := d.e.ImportState(path)
	if errors.Is(err, engine.ErrLocked) {
		// A process opened the directory meanwhile: ask it, if it
		// serves queries.
		d.e.Close()
		d.e = nil
		d.peekErr = fmt.Errorf("process %d opened %s while doctor read it; run `bbengine doctor` again", lockPID(err), d.req.Dir)
		if h, held, _ := engine.ReadHolder(d.req.Dir); held && h.Addr != "" {
			d.remote = &Remote{Addr: h.Addr, Token: h.Token, PID: h.PID, Proxy: h.Proxy}
			return (&remoteSink{*d.remote}).State(path)
		}
		return nil, d.peekErr
	}
	if err != nil || !ok {
		return nil, err
	}
	return &st, nil
}

// lockPID is the holder's process in err, a *engine.LockedError.
func lockPID(err error) int {
	var le *engine.LockedError
	if errors.As(err, &le) {
		return le.Holder.PID
	}
	return 0
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

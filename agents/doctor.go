package agents

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"time"
)

// ProgramVersion runs `program --version` found on PATH, giving up after
// timeout, and returns where the program is and the first line it wrote.
// An error wrapping exec.ErrNotFound means it is not on PATH.
func ProgramVersion(program string, timeout time.Duration) (path, version string, err error) {
	path, err = exec.LookPath(program)
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.WaitDelay = time.Second // a child that keeps stdout open
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	line = strings.TrimSpace(line)
	switch {
	case ctx.Err() != nil:
		return path, "", fmt.Errorf("%s --version did not answer within %v", path, timeout)
	case err != nil:
		return path, "", fmt.Errorf("%s --version: %v (%q)", path, err, line)
	}
	return path, line, nil
}

// VersionFinding is the version check of an agent whose program is
// named program: ok with its version, or a warn when it is not on PATH
// or does not answer (the agent's files were found, so it was there).
func VersionFinding(env *DoctorEnv, agent, title, program string) Finding {
	f := Finding{Agent: agent, Check: "version"}
	path, v, err := ProgramVersion(program, env.Timeout)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		f.Severity, f.Message = Warn, fmt.Sprintf("%s: %s is not on PATH (its files are here)", title, program)
		f.Fix = fmt.Sprintf("install %s, or put %s on PATH", title, program)
	case err != nil:
		f.Severity, f.Message = Warn, fmt.Sprintf("%s: %v", title, err)
		f.Fix = fmt.Sprintf("run `%s --version` yourself to see what is wrong", program)
	default:
		f.Severity, f.Message = OK, fmt.Sprintf("%s %s (%s)", title, v, path)
	}
	return f
}

// BaseURLFinding checks the base URL an agent sends its requests to:
// base as the setting named where holds it ("" when none is set), with
// suffix the path the agent's base URL has beyond the proxy's address
// ("/v1" for OpenAI's). It is ok when base is the running proxy of the
// data directory; a warn when it is no proxy or another bbengine proxy;
// a fail when it is a loopback address where nothing answers, for then
// every request of the agent fails. fix says how to set it.
func BaseURLFinding(env *DoctorEnv, agent, where, base, suffix, fix string) Finding {
	f := Finding{Agent: agent, Check: "base-url"}
	want := "a running `bbengine proxy`"
	if env.Proxy != "" {
		want = env.Proxy + suffix
	}
	switch {
	case base == "":
		f.Severity = Warn
		f.Message = fmt.Sprintf("%s is not set: requests go to the provider directly; only `bbengine import %s` records them", where, agent)
		f.Fix = fix
	case env.Proxy != "" && sameBase(base, env.Proxy+suffix):
		f.Severity, f.Message = OK, fmt.Sprintf("%s is %s, the running proxy of the data directory", where, base)
	case env.Proxy != "" && sameAddr(base, env.Proxy):
		f.Severity = Warn
		f.Message = fmt.Sprintf("%s is %s: the running proxy's address, but the agent's requests need the path %s", where, base, env.Proxy+suffix)
		f.Fix = fmt.Sprintf("set %s to %s", where, want)
	case isLoopback(base) && env.IsProxy != nil && env.IsProxy(strings.TrimSuffix(strings.TrimRight(base, "/"), suffix)):
		f.Severity = Warn
		f.Message = fmt.Sprintf("%s is %s, a bbengine proxy of another data directory", where, base)
		f.Fix = fmt.Sprintf("set %s to %s", where, want)
		if env.Proxy == "" {
			f.Fix = "run `bbengine doctor --dir` with that proxy's data directory, or " + fix
		}
	case isLoopback(base):
		f.Severity = Fail
		f.Message = fmt.Sprintf("%s is %s, but no bbengine proxy answers there: every request of the agent fails", where, base)
		f.Fix = "start `bbengine proxy` (its --listen must match), or " + fix
		if env.Proxy != "" {
			f.Fix = fmt.Sprintf("set %s to %s", where, want)
		}
	default:
		f.Severity = Warn
		f.Message = fmt.Sprintf("%s is %s: requests do not go through bbengine's proxy; only `bbengine import %s` records them", where, base, agent)
		f.Fix = fmt.Sprintf("to record them live, run `bbengine proxy --upstream NAME=%s` and set %s to %s", base, where, want)
	}
	return f
}

// sameBase reports whether two base URLs name the same address and
// path, taking localhost for 127.0.0.1.
func sameBase(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimRight(a, "/"))
	ub, err2 := url.Parse(strings.TrimRight(b, "/"))
	if err1 != nil || err2 != nil {
		return false
	}
	host := func(u *url.URL) string {
		h := u.Hostname()
		if h == "localhost" {
			h = "127.0.0.1"
		}
		return h + ":" + u.Port()
	}
	return ua.Scheme == ub.Scheme && host(ua) == host(ub) && ua.Path == ub.Path
}

// sameAddr reports whether two URLs name the same scheme, host and
// port, whatever their paths.
func sameAddr(a, b string) bool {
	strip := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.Path, u.RawPath = "", ""
		return u.String()
	}
	return sameBase(strip(a), strip(b))
}

// isLoopback reports whether the URL u names a loopback host.
func isLoopback(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := p.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// HookDirFinding is the hooks check of an agent whose hooks, registered
// in file, pass the data directories dirs ("" for the default): ok when
// they are the data directory doctor checks (env.Dir), else a warn, for
// then the context packs come from another directory.
func HookDirFinding(env *DoctorEnv, agent, file string, dirs []string) Finding {
	f := Finding{Agent: agent, Check: "hooks", Severity: OK,
		Message: fmt.Sprintf("bbengine's SessionStart and UserPromptSubmit hooks are registered in %s", file)}
	name := func(d string) string {
		if d == "" {
			return "the default data directory"
		}
		return d
	}
	for _, d := range dirs {
		if d != env.Dir {
			f.Severity = Warn
			f.Message = fmt.Sprintf("bbengine's hooks in %s read %s, not %s, the data directory checked here", file, name(d), name(env.Dir))
			f.Fix = fmt.Sprintf("run `bbengine install %s` again with the --dir the proxy records into, or run doctor with --dir %s", agent, ShellQuote(d))
			if d == "" {
				f.Fix = fmt.Sprintf("run `bbengine install %s` again with the --dir the proxy records into, or run doctor without --dir", agent)
			}
			break
		}
	}
	return f
}

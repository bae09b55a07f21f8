package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/internal/private"
)

// LoopbackAddr checks that addr is host:port with a loopback host, and
// returns it with localhost spelt 127.0.0.1. The harness API and the MCP
// server's HTTP transport hand out memory, so they serve this machine
// only.
func LoopbackAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("%q: want host:port on loopback, such as 127.0.0.1:PORT", addr)
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		if host == "" {
			host = "every interface"
		}
		return "", fmt.Errorf("%s is not a loopback address: this endpoint listens on loopback only (use 127.0.0.1:PORT)", host)
	}
	return net.JoinHostPort(host, port), nil
}

// minToken is the shortest bearer token accepted.
const minToken = 16

// BearerToken returns the bearer token of an endpoint: configured when
// it is set, else the one kept in dir/name, written there (mode 0600)
// the first time. file is the token file's path when the token came
// from it, and made says it was written now.
func BearerToken(dir, name, configured string) (token, file string, made bool, err error) {
	if configured != "" {
		if len(configured) < minToken {
			return "", "", false, fmt.Errorf("a token of %d characters: use at least %d random ones, e.g. from `openssl rand -hex 16`", len(configured), minToken)
		}
		return configured, "", false, nil
	}
	file = filepath.Join(dir, name)
	b, err := os.ReadFile(file)
	switch {
	case err == nil:
		if t := strings.TrimSpace(string(b)); len(t) >= minToken {
			return t, file, false, nil
		}
		return "", "", false, fmt.Errorf("%s holds no token of at least %d characters: delete it to have a new one written", file, minToken)
	case !errors.Is(err, fs.ErrNotExist):
		return "", "", false, fmt.Errorf("read the token: %w", err)
	}
	var rnd [24]byte
	rand.Read(rnd[:])
	token = hex.EncodeToString(rnd[:])
	if _, err := private.Secure(dir); err != nil {
		return "", "", false, err
	}
	if err := private.WriteFile(file, []byte(token+"\n")); err != nil {
		return "", "", false, fmt.Errorf("write the token: %w", err)
	}
	return token, file, true, nil
}

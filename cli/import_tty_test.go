//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its controller, which reads what is
// written to the terminal, and the terminal itself.
func openPTY(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ctl.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ctl.Close()
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		ctl.Close()
		t.Skipf("name the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		ctl.Close()
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	return ctl, tty
}

// TestImportAllProgressOnTerminal: with stderr a terminal, import --all
// draws each agent's progress bar, named, and ends it with its line.
func TestImportAllProgressOnTerminal(t *testing.T) {
	allHome(t, "claude", "claude2", "codex")
	ctl, tty := openPTY(t)
	defer ctl.Close()
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, ctl) // until the terminal is closed (EIO)
		got <- b.Bytes()
	}()
	var out bytes.Buffer
	code := Main([]string{"bbengine", "--dir", t.TempDir(), "import", "--all"}, &out, tty)
	tty.Close()
	errs := string(<-got)
	if code != 0 {
		t.Fatalf("import --all: %d\n%s", code, errs)
	}
	for _, w := range []string{"\rclaude [" + strings.Repeat("=", 30) + "] 2/2 files", "claude: imported 2 records", "codex: imported 6 records", "gemini: no logs in "} {
		if !strings.Contains(errs, w) {
			t.Errorf("terminal lacks %q:\n%q", w, errs)
		}
	}
	// One file draws no bar.
	if strings.Contains(errs, "codex [") {
		t.Errorf("a bar for codex's one file:\n%q", errs)
	}
}

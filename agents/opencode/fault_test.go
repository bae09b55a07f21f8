package opencode_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/bbengine/bbengine/agents/all"
	"github.com/bbengine/bbengine/cli"

	_ "modernc.org/sqlite"
)

const (
	fixture        = "testdata/opencode-1.18.33-tools.db"
	fixtureSession = "ses_de3373617ffeEUid1EoeXUeDtH"
)

// home copies the fixture into a new home's opencode data directory and
// returns the home and the database's path there.
func home(t *testing.T) (string, string) {
	t.Helper()
	h := t.TempDir()
	dir := filepath.Join(h, ".local", "share", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "opencode.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(fixture + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(db+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return h, db
}

// exec runs statements on the database at path as a writer would
// (opencode itself, in WAL mode).
func exec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// bbengine runs the command line with HOME set to h and returns its
// output; code is its exit code.
func bbengine(t *testing.T, h, dir string, args ...string) (out string, code int) {
	t.Helper()
	t.Setenv("HOME", h)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("OPENCODE_DB", "")
	var o, e bytes.Buffer
	code = cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &o, &e)
	t.Logf("bbengine %v: exit %d\n%s%s", args, code, o.String(), e.String())
	return o.String() + e.String(), code
}

// TestImportNotJSON: a row whose data is not JSON is skipped, and the
// message names the database, the table and the row's id; the rest of
// the session is imported.
func TestImportNotJSON(t *testing.T) {
	h, db := home(t)
	exec(t, db, `update part set data = 'not json {' where id = 'prt_21cc8d2880013MCHA3PBK6Qz3Q'`)
	out, code := bbengine(t, h, t.TempDir(), "import", "opencode", "--all", "--check")
	if code != 1 { // records were skipped
		t.Errorf("exit %d, want 1", code)
	}
	if want := db + ": table part, id prt_21cc8d2880013MCHA3PBK6Qz3Q: data is not a JSON object (skipped)"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q", want)
	}
	if !strings.Contains(out, "nothing lost") || !strings.Contains(out, "1 problems") {
		t.Errorf("import did not go on past the row")
	}
}

// TestImportTornWAL: a -wal cut inside a frame (a crash while opencode
// wrote) is read up to its last whole transaction; the import does not
// fail.
func TestImportTornWAL(t *testing.T) {
	h, db := home(t)
	fi, err := os.Stat(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	// A frame is 24 bytes of header and a 4096-byte page: cut the last
	// one in its page.
	if err := os.Truncate(db+"-wal", fi.Size()-2000); err != nil {
		t.Fatal(err)
	}
	out, code := bbengine(t, h, t.TempDir(), "import", "opencode", "--all", "--check")
	if code != 0 || !strings.Contains(out, "nothing lost") || !strings.Contains(out, "opencode:"+fixtureSession) {
		t.Errorf("exit %d", code)
	}
}

// TestImportReplaced: a database replaced by another at the same path
// (its first migration is another) is imported again as a new
// generation, and only the new database's rows count.
func TestImportReplaced(t *testing.T) {
	h, db := home(t)
	dir := t.TempDir()
	if _, code := bbengine(t, h, dir, "import", "opencode", "--all"); code != 0 {
		t.Fatal("first import failed")
	}
	exec(t, db,
		`update migration set time_completed = time_completed + 1000`,
		`delete from part where id = 'prt_21cc8d2880013MCHA3PBK6Qz3Q'`)
	out, code := bbengine(t, h, dir, "import", "opencode", "--all", "--check")
	if code != 0 || !strings.Contains(out, "was replaced since it was imported") {
		t.Fatalf("exit %d: the replacement was not noticed", code)
	}
	// The reasoning part is gone with the old generation.
	if !strings.Contains(out, "nothing lost") || !strings.Contains(out, "thinking blocks                  0         0") {
		t.Errorf("the new generation is not what the database holds")
	}
}

// TestImportReadOnlyDir: a database in a directory that cannot be
// written, with no -shm, cannot be opened read-only (SQLite must make
// the -shm); the error names the database and says why. As root, the
// directory is made immutable (chattr +i), which root cannot write
// either; the test skips where that is not possible.
func TestImportReadOnlyDir(t *testing.T) {
	h, db := home(t)
	os.Remove(db + "-shm")
	dir := filepath.Dir(db)
	if os.Geteuid() == 0 {
		if out, err := osexec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
			t.Skipf("root writes any directory, and chattr +i failed: %v %s", err, out)
		}
		t.Cleanup(func() { osexec.Command("chattr", "-i", dir).Run() })
	} else {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o644); err == nil {
		t.Skip("the directory is still writable")
	}
	out, code := bbengine(t, h, t.TempDir(), "import", "opencode", "--all")
	if code == 0 || !strings.Contains(out, "import: "+db+": cannot open it read-only: ") || !strings.Contains(out, "opencode.db-shm, which is missing") {
		t.Errorf("exit %d: the error does not name the database and its missing -shm", code)
	}
}

// TestImportWhileWriting imports again and again while a writer in WAL
// mode adds parts to the session: every import succeeds, and the last
// one, after the writer stopped, has every part.
func TestImportWhileWriting(t *testing.T) {
	h, db := home(t)
	dir := t.TempDir()
	w, err := sql.Open("sqlite", "file:"+db+"?_pragma=journal_mode(wal)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	done := make(chan error, 1)
	const n = 40
	go func() {
		for i := range n {
			_, err := w.Exec(`insert into part (id, message_id, session_id, time_created, time_updated, data) values (?, 'msg_21cc8d22a001psOdOU9JeGlMAc', ?, ?, ?, ?)`,
				fmt.Sprintf("prt_zz%03d", i), fixtureSession, 1795779260000+i, 1795779260000+i, `{"type":"text","text":"more `+itoa(i)+`"}`)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range 5 {
		if _, code := bbengine(t, h, dir, "import", "opencode", "--all"); code != 0 {
			t.Fatal("an import failed while the writer wrote")
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// What the imports took in pieces is what one import of the
	// database as it is now takes.
	if _, code := bbengine(t, h, dir, "import", "opencode", "--all"); code != 0 {
		t.Fatal("the last import failed")
	}
	fresh := t.TempDir()
	out, code := bbengine(t, h, fresh, "import", "opencode", "--all", "--check")
	if code != 0 || !strings.Contains(out, "nothing lost") || !strings.Contains(out, "assistant messages              42        42") {
		t.Fatalf("exit %d", code)
	}
	got, _ := bbengine(t, h, dir, "show", "opencode:"+fixtureSession)
	want, _ := bbengine(t, h, fresh, "show", "opencode:"+fixtureSession)
	if got != want || !strings.Contains(got, "more 39") {
		t.Errorf("the session imported in pieces differs from the one imported at once")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestSecretsAtRest plants tokens in the tables that hold them (account,
// control_account, credential, session_share) and in the session's
// share_url: none reaches the data directory.
func TestSecretsAtRest(t *testing.T) {
	h, db := home(t)
	secrets := []string{"acctAccessZq81v", "acctRefreshYw72u", "credValueXk63t", "shareSecretWj54s", "shareUrlVh45r"}
	exec(t, db,
		`insert into account (id, email, url, access_token, refresh_token, time_created, time_updated) values ('a1', 'u@example.invalid', 'https://example.invalid', 'acctAccessZq81v', 'acctRefreshYw72u', 1, 1)`,
		`insert into credential (id, label, value, time_created, time_updated) values ('c1', 'key', 'credValueXk63t', 1, 1)`,
		`insert into session_share (session_id, id, secret, url, time_created, time_updated) values ('`+fixtureSession+`', 's1', 'shareSecretWj54s', 'https://example.invalid/shareUrlVh45r', 1, 1)`,
		`update session set share_url = 'https://example.invalid/shareUrlVh45r' where id = '`+fixtureSession+`'`,
	)
	dir := t.TempDir()
	if _, code := bbengine(t, h, dir, "import", "opencode", "--all", "--check"); code != 0 {
		t.Fatal("import failed")
	}
	// The import did get the session.
	if out, _ := bbengine(t, h, dir, "show", "opencode:"+fixtureSession); !strings.Contains(out, "echo hi") {
		t.Fatalf("the session was not imported")
	}
	secretsIn(t, dir, secrets...)
}

// TestImportTreeCLI imports the hand-written JSON tree of 1.1 from a
// home's data directory, beside a database: two sessions, nothing lost,
// and the tree's session_share (a secret) never read.
func TestImportTreeCLI(t *testing.T) {
	h, db := home(t)
	src := filepath.Join("testdata", "json-tree-1.1-handwritten", "storage")
	dst := filepath.Join(filepath.Dir(db), "storage")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, code := bbengine(t, h, dir, "import", "opencode", "--all", "--check")
	if code != 0 || !strings.Contains(out, "import --check: 2 sessions, nothing lost") || !strings.Contains(out, "opencode:ses_tree1aaaaaaaaaaaaaaaaaaaaa (22 files)") {
		t.Fatalf("exit %d", code)
	}
	if out, _ := bbengine(t, h, dir, "show", "opencode:ses_tree1aaaaaaaaaaaaaaaaaaaaa"); !strings.Contains(out, "File not found") {
		t.Errorf("the tree's session lacks the failed read")
	}
	// Nothing new the second time.
	if out, _ := bbengine(t, h, dir, "import", "opencode", "--all"); !strings.Contains(out, "imported 0 records") {
		t.Errorf("a second import took records again")
	}
	secretsIn(t, dir, "treeShareSecretQp12", "treeShareUrlRs34")
}

// TestConvert converts the fixture's database to ATIF with --check, as
// convert takes a log; a database of two sessions must be given one of
// them as <db>#<session id>, which the error says.
func TestConvert(t *testing.T) {
	h, db := home(t)
	if out, code := bbengine(t, h, t.TempDir(), "convert", "--from", "opencode", "--to", "atif", "--check", "-o", filepath.Join(t.TempDir(), "a.json"), db); code != 0 || !strings.Contains(out, "nothing lost") {
		t.Fatalf("convert: exit %d", code)
	}
	exec(t, db, `insert into session (id, project_id, slug, directory, title, version, time_created, time_updated) select 'ses_other0000000000000000000', project_id, 'o', directory, 'other', version, 1, 1 from session`)
	out, code := bbengine(t, h, t.TempDir(), "convert", "--from", "opencode", "--to", "atif", db)
	if code == 0 || !strings.Contains(out, "holds 2 sessions: name one as "+db+"#<session id>") {
		t.Errorf("convert of a database of two sessions: exit %d", code)
	}
	if out, code := bbengine(t, h, t.TempDir(), "convert", "--from", "opencode", "--to", "atif", "--check", "-o", filepath.Join(t.TempDir(), "b.json"), db+"#"+fixtureSession); code != 0 || !strings.Contains(out, "nothing lost") {
		t.Errorf("convert of one session: exit %d", code)
	}
}

// TestDoctorLogs: doctor counts the database imported when no row is new
// since the import, and not once opencode wrote another.
func TestDoctorLogs(t *testing.T) {
	h, db := home(t)
	dir := t.TempDir()
	t.Setenv("PATH", t.TempDir()) // no opencode to run
	if _, code := bbengine(t, h, dir, "import", "opencode", "--all"); code != 0 {
		t.Fatal("import failed")
	}
	if out, _ := bbengine(t, h, dir, "doctor"); !strings.Contains(out, "opencode logs       all 1 logs in "+filepath.Dir(db)+" are imported") {
		t.Errorf("doctor after the import")
	}
	exec(t, db, `insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zz1', 'msg_21cc8d22a001psOdOU9JeGlMAc', '`+fixtureSession+`', 1795779260000, 1795779260000, '{"type":"text","text":"more"}')`)
	if out, _ := bbengine(t, h, dir, "doctor"); !strings.Contains(out, "1 logs in "+filepath.Dir(db)) || strings.Contains(out, "are imported") {
		t.Errorf("doctor after opencode wrote a row")
	}
}

// TestImportNotSQLite: an opencode.db that is empty (or too short, or
// not SQLite) beside its -wal is refused with an error naming it, and
// the -wal is left as it was: SQLite would delete it on a read-only open
// of an empty database.
func TestImportNotSQLite(t *testing.T) {
	for _, tc := range []struct{ name, db, want string }{
		{"empty", "", "0 bytes, shorter than its 100-byte header"},
		{"short", "SQLite format 3\x00", "16 bytes, shorter than its 100-byte header"},
		{"other", strings.Repeat("not a database ", 10), `its first bytes are not "SQLite format 3"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, db := home(t)
			if err := os.WriteFile(db, []byte(tc.db), 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(db + "-wal")
			if err != nil {
				t.Fatal(err)
			}
			out, code := bbengine(t, h, t.TempDir(), "import", "opencode", "--all")
			if code == 0 || !strings.Contains(out, db+": not an SQLite database: "+tc.want) {
				t.Errorf("exit %d, want an error naming %s", code, db)
			}
			if after, err := os.ReadFile(db + "-wal"); err != nil || !bytes.Equal(after, before) {
				t.Errorf("the -wal changed: %v", err)
			}
		})
	}
}

// TestImportBadShape: a message and a part whose data is JSON of the
// wrong shape (a tool state that is a string, a time that is a word) are
// imported, reported naming the database, table and id, counted, and
// what can be read of them kept: the message's other parts, the tool
// call.
func TestImportBadShape(t *testing.T) {
	h, db := home(t)
	exec(t, db, `update part set data = '{"type":"tool","tool":"bash","callID":"call_1","state":"oops"}' where id = 'prt_21cc8d148001TF8eRzpPWcHTvA'`,
		`update message set data = '{"role":"assistant","time":{"created":"yesterday"}}' where id = 'msg_21cc8d22a001psOdOU9JeGlMAc'`)
	dir := t.TempDir()
	out, _ := bbengine(t, h, dir, "import", "opencode", "--all", "--check")
	for _, w := range []string{
		db + ": table part, id prt_21cc8d148001TF8eRzpPWcHTvA: data.state is a JSON string, not an object (imported, the rest of it read)",
		db + ": table message, id msg_21cc8d22a001psOdOU9JeGlMAc: data.time.created is a JSON string, not a number (imported, the rest of it read)",
		"2 problems", "nothing lost",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("the output lacks %q", w)
		}
	}
	show, _ := bbengine(t, h, dir, "show", "opencode:"+fixtureSession)
	if !strings.Contains(show, "It printed hi.") || !strings.Contains(show, "bash") {
		t.Errorf("the rows of the wrong shape, or their message's other parts, were dropped")
	}
	// A second import reports nothing again.
	if out, _ := bbengine(t, h, dir, "import", "opencode", "--all"); !strings.Contains(out, "0 problems") {
		t.Errorf("a second import reported the rows again")
	}
}

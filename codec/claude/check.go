package claude

import (
	"errors"

	"github.com/bbengine/bbengine/codec/agentlog"
)

// ErrNotRecord reports a JSON object that is no line of a Claude Code
// log: it has no string "type".
var ErrNotRecord = errors.New(`not a Claude Code record: no "type"`)

// CheckLine reports whether b (one line, without its line ending) is a
// line of a Claude Code log: a JSON object with a non-empty string
// "type". It reads b once and decodes nothing else, so an importer can
// check every line cheaply. A line that is not JSON fails with an
// *agentlog.SyntaxError naming the column; JSON of another kind with an
// error wrapping agentlog.ErrNotObject; an object without a type with
// ErrNotRecord. A line of a type this package does not know passes: it
// is a record, kept verbatim.
func CheckLine(b []byte) error {
	v, err := agentlog.Fields(b, "type")
	if err != nil {
		return err
	}
	if v[0] == "" {
		return ErrNotRecord
	}
	return nil
}

package codex

import (
	"errors"

	"github.com/bbengine/bbengine/codec/agentlog"
)

// ErrNotRecord reports a JSON object that is no rollout line: it has no
// string "type", nor the "record_type" or "id" of a pre-envelope line.
var ErrNotRecord = errors.New(`not a Codex rollout record: no "type"`)

// CheckLine reports whether b (one line, without its line ending) is a
// rollout line: a JSON object with a non-empty string "type" (an
// envelope, or a bare pre-envelope item), "record_type" (a pre-envelope
// state marker) or "id" (a pre-envelope header). It reads b once and
// decodes nothing else. A line that is not JSON fails with an
// *agentlog.SyntaxError naming the column; JSON of another kind with an
// error wrapping agentlog.ErrNotObject; an object of neither shape with
// ErrNotRecord. A line of a type this package does not know passes.
func CheckLine(b []byte) error {
	v, err := agentlog.Fields(b, "type", "record_type", "id")
	if err != nil {
		return err
	}
	if v[0] == "" && v[1] == "" && v[2] == "" {
		return ErrNotRecord
	}
	return nil
}

package exchange

import (
	"encoding/json"
	"fmt"
)

// Correction is the payload of a memory frame (frame.KindMemory): a
// user's correction of derived memory. It is JSON:
//
//	{"op":"forget","target":"artifact","id":"dec-3f9a2c1b7e4d","reason":"wrong"}
//
// Op is forget, unforget, pin or unpin; Target is artifact or session;
// ID names it; Reason is optional. A forgotten artifact is hidden from
// retrieval (the evidence stays in the WAL); a pinned artifact ranks
// higher, and a pinned session is exempt from retention.
type Correction struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// MaxCorrection bounds a correction payload.
const MaxCorrection = 4 << 10

// AppendCorrection appends c's encoding to dst.
func AppendCorrection(dst []byte, c Correction) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return dst, err
	}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// Validate checks the op, the target and the id.
func (c Correction) Validate() error {
	switch c.Op {
	case "forget", "unforget", "pin", "unpin":
	default:
		return fmt.Errorf("%w: correction op %q (want forget, unforget, pin or unpin)", ErrPayload, c.Op)
	}
	switch c.Target {
	case "artifact", "session":
	default:
		return fmt.Errorf("%w: correction target %q (want artifact or session)", ErrPayload, c.Target)
	}
	if c.ID == "" || len(c.ID) > 1024 {
		return fmt.Errorf("%w: correction id of %d bytes", ErrPayload, len(c.ID))
	}
	if len(c.Reason) > 2048 {
		return fmt.Errorf("%w: correction reason of %d bytes (at most 2048)", ErrPayload, len(c.Reason))
	}
	return nil
}

// DecodeCorrection decodes a memory frame's payload.
func DecodeCorrection(p []byte) (Correction, error) {
	var c Correction
	if len(p) > MaxCorrection {
		return c, fmt.Errorf("%w: correction of %d bytes (at most %d)", ErrPayload, len(p), MaxCorrection)
	}
	if err := json.Unmarshal(p, &c); err != nil {
		return c, fmt.Errorf("%w: correction: %v", ErrPayload, err)
	}
	return c, c.Validate()
}

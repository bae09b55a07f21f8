package gemini

import (
	"encoding/json"
	"strconv"
)

// The source census (count) reads each line by its raw JSON shape, with
// a decoder of its own (censusLine) rather than the importer's
// (parseLine, decodeLenient): were the importer to drop a message or a
// member, the census would still count it, and the data-loss check
// would show the difference. Both follow the same rules: a line is
// classified by its keys; a member of another type than the one below
// is left unset and makes the line a parse error; the rest is read.

// obj is a JSON object's members, raw.
type obj map[string]json.RawMessage

// object returns raw as an object; ok false when it is none.
func object(raw json.RawMessage) (obj, bool) {
	raw = trim(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var o obj
	return o, json.Unmarshal(raw, &o) == nil
}

// trim returns raw without surrounding white space.
func trim(raw json.RawMessage) json.RawMessage {
	i, j := 0, len(raw)
	for i < j && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	for j > i && (raw[j-1] == ' ' || raw[j-1] == '\t' || raw[j-1] == '\n' || raw[j-1] == '\r') {
		j--
	}
	return raw[i:j]
}

// absent reports whether member k is missing or null.
func (o obj) absent(k string) bool {
	v := trim(o[k])
	return len(v) == 0 || string(v) == "null"
}

// str returns member k, a string; "" when absent, or of another type
// (then *odd is set).
func (o obj) str(k string, odd *bool) string {
	var s string
	if !o.absent(k) && (trim(o[k])[0] != '"' || json.Unmarshal(o[k], &s) != nil) {
		*odd = true
	}
	return s
}

// int returns member k, an integer; 0 when absent, or of another type.
func (o obj) int(k string, odd *bool) int64 {
	if o.absent(k) {
		return 0
	}
	n, err := strconv.ParseInt(string(trim(o[k])), 10, 64)
	if err != nil {
		*odd = true
	}
	return n
}

// list returns member k, an array; nil when absent, or of another type.
func (o obj) list(k string, odd *bool) []json.RawMessage {
	if o.absent(k) {
		return nil
	}
	var l []json.RawMessage
	if trim(o[k])[0] != '[' || json.Unmarshal(o[k], &l) != nil {
		*odd = true
		return nil
	}
	if l == nil {
		l = []json.RawMessage{}
	}
	return l
}

// elems calls f with each object of member k, an array of objects (an
// empty one for a null element); another element is skipped, odd.
func (o obj) elems(k string, odd *bool, f func(obj)) {
	for _, raw := range o.list(k, odd) {
		if string(trim(raw)) == "null" {
			f(obj{})
			continue
		}
		e, ok := object(raw)
		if !ok {
			*odd = true
			continue
		}
		f(e)
	}
}

// censusMessage reads a message record.
func censusMessage(o obj, odd *bool) *message {
	m := &message{ID: o.str("id", odd), Timestamp: o.str("timestamp", odd), Type: o.str("type", odd),
		Content: o["content"], Model: o.str("model", odd)}
	o.elems("thoughts", odd, func(t obj) {
		m.Thoughts = append(m.Thoughts, struct {
			Subject     string `json:"subject"`
			Description string `json:"description"`
			Timestamp   string `json:"timestamp"`
		}{t.str("subject", odd), t.str("description", odd), t.str("timestamp", odd)})
	})
	if !o.absent("tokens") {
		if t, ok := object(o["tokens"]); ok {
			m.Tokens = &tokens{Input: t.int("input", odd), Output: t.int("output", odd), Cached: t.int("cached", odd),
				Thoughts: t.int("thoughts", odd), Tool: t.int("tool", odd), Total: t.int("total", odd)}
		} else {
			*odd = true
		}
	}
	o.elems("toolCalls", odd, func(c obj) {
		m.ToolCalls = append(m.ToolCalls, toolCall{ID: c.str("id", odd), Name: c.str("name", odd), Args: c["args"], Result: c["result"],
			Status: c.str("status", odd), Timestamp: c.str("timestamp", odd), ResultDisplay: c["resultDisplay"]})
	})
	return m
}

// censusMeta reads the metadata members of o.
func censusMeta(o obj, odd *bool) meta {
	m := meta{SessionID: o.str("sessionId", odd), ProjectHash: o.str("projectHash", odd), StartTime: o.str("startTime", odd),
		LastUpdated: o.str("lastUpdated", odd), Kind: o.str("kind", odd), Summary: o.str("summary", odd)}
	for _, raw := range o.list("directories", odd) {
		var d string // null reads as ""
		if json.Unmarshal(raw, &d) != nil {
			*odd, m.Directories = true, nil
			break
		}
		m.Directories = append(m.Directories, d)
	}
	return m
}

// censusLine classifies and reads one line as count does; odd reports a
// member of another type. The error is for a line that is no JSON
// object.
func censusLine(b []byte) (l line, odd bool, err error) {
	o, ok := object(b)
	if !ok {
		return line{}, false, ErrNotRecord
	}
	isString := func(k string) bool {
		v := trim(o[k])
		return len(v) > 0 && v[0] == '"'
	}
	switch {
	case isString("$rewindTo"):
		l.kind = lineRewind
		json.Unmarshal(o["$rewindTo"], &l.rewind)
	case isString("id"):
		l.kind, l.msg = lineMessage, censusMessage(o, &odd)
	case len(trim(o["$set"])) > 0 && trim(o["$set"])[0] == '{':
		l.kind = lineSet
		set, _ := object(o["$set"])
		l.meta = censusMeta(set, &odd)
		if msgs := set.list("messages", &odd); msgs != nil {
			l.set = []*message{}
			for _, raw := range msgs {
				m, ok := object(raw)
				if !ok {
					odd = true
					continue
				}
				if msg := censusMessage(m, &odd); msg.ID != "" {
					l.set = append(l.set, msg)
				} else {
					odd = true
				}
			}
		}
	case isString("sessionId") && isString("projectHash"):
		l.kind, l.meta = lineMeta, censusMeta(o, &odd)
	default:
		l.kind = lineUnknown
	}
	return l, odd, nil
}

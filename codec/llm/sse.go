package llm

import "bytes"

// Event is one server-sent event.
type Event struct {
	// Type is the event field ("" when the stream has only data lines).
	Type string
	// Data is the data lines joined by "\n". It aliases the body when the
	// event has a single data line.
	Data []byte
	// Offset is the byte offset of the event's first line in the body.
	Offset int
	// dataAt is one more than the offset of Data in the body when the
	// event has a single data line and a Decoder split it (0 otherwise).
	dataAt int
}

// Events splits an SSE body into events, following the WHATWG rules:
// lines end in LF, CRLF or CR; a blank line dispatches the event; lines
// starting with ':' are comments; "data" lines accumulate; an event
// without data is not dispatched. The last event is dispatched at the end
// of the body even without a terminating blank line (recorded streams
// often lack one). fn returning false stops the walk.
func Events(body []byte, fn func(Event) bool) {
	var (
		ev      Event
		data    [][]byte
		started = -1
	)
	dispatch := func() bool {
		defer func() { ev, data, started = Event{}, data[:0], -1 }()
		if len(data) == 0 {
			return true
		}
		if len(data) == 1 {
			ev.Data = data[0]
		} else {
			ev.Data = bytes.Join(data, []byte("\n"))
		}
		ev.Offset = started
		return fn(ev)
	}
	for pos := 0; pos < len(body); {
		end := pos
		for end < len(body) && body[end] != '\n' && body[end] != '\r' {
			end++
		}
		line := body[pos:end]
		next := end
		if next < len(body) {
			if body[next] == '\r' && next+1 < len(body) && body[next+1] == '\n' {
				next += 2
			} else {
				next++
			}
		}
		if len(line) == 0 {
			if !dispatch() {
				return
			}
			pos = next
			continue
		}
		if started < 0 {
			started = pos
		}
		if line[0] != ':' {
			field, value := sseField(line)
			switch string(field) {
			case "event":
				ev.Type = string(value)
			case "data":
				data = append(data, value)
			}
		}
		pos = next
	}
	dispatch()
}

// sseField splits an SSE line (not a comment) into its field name and
// value, without the one space that may follow the colon.
func sseField(line []byte) (field, value []byte) {
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	field, value = line[:i], line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return field, value
}

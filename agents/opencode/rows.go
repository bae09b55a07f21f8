package opencode

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// row is one imported record as the importer and the census read it: a
// database row (store.go), or a file of the JSON tree (tree.go) put in
// the same shape.
type row struct {
	Table       string          `json:"table"`
	ID          string          `json:"id"`
	MessageID   string          `json:"message_id"`
	SessionID   string          `json:"session_id"`
	TimeCreated int64           `json:"time_created"`
	TimeUpdated int64           `json:"time_updated"`
	Data        json.RawMessage `json:"data"`
	// session_message's type and seq.
	Type string `json:"type"`
	Seq  int64  `json:"seq"`
	// The session table's columns.
	ParentID  string          `json:"parent_id"`
	Directory string          `json:"directory"`
	Title     string          `json:"title"`
	Version   string          `json:"version"`
	Agent     string          `json:"agent"`
	Model     json.RawMessage `json:"model"`
	Children  []child         `json:"children"`
	// MessageIDs are the ids of the session's message and
	// session_message rows when the session row was read (store.go);
	// nil in a file of the JSON tree.
	MessageIDs []string `json:"message_ids"`

	// rec is the index of the record it came from, first that of the
	// record that first held its id.
	rec, first int
}

// sessionState is a session as its records leave it: the last version of
// each row, by id.
type sessionState struct {
	session  *row
	messages map[string]*row
	parts    map[string]*row
	v2       map[string]*row // session_message rows
	// bad counts the records that did not decode.
	bad int64
	// ids counts the distinct rows that stand; dropped the messages
	// (and session_message rows) opencode deleted since they were
	// imported (a revert), whose rows, and their parts', are left out.
	ids, dropped int64
}

// resolve applies records in order, the last version of an id winning,
// whatever its time_updated: a row may be rewritten with an older one (a
// clock stepped back). Two imports racing may append an older version
// after a newer one; it stands until the next read, which finds the row
// differing from its fingerprint (engine.ImportFileState.RowChanged) and
// imports it again. A record that does not decode is counted in bad.
func resolve(datas [][]byte, decode func([]byte) ([]row, error)) *sessionState {
	st := &sessionState{messages: map[string]*row{}, parts: map[string]*row{}, v2: map[string]*row{}}
	seen := map[string]int{}
	for i, d := range datas {
		rs, err := decode(d)
		if err != nil {
			st.bad++
			continue
		}
		for _, r := range rs {
			r := r
			r.rec, r.first = i, i
			if r.Table == "db" {
				continue
			}
			key := r.Table + "/" + r.ID
			if f, ok := seen[key]; ok {
				r.first = f
			} else {
				seen[key] = i
			}
			switch r.Table {
			case "session":
				if st.session != nil && st.session.MessageIDs != nil && r.MessageIDs == nil {
					// A file of the JSON tree never replaces the
					// database's row: opencode 1.2 migrated the tree
					// into the database and left it in place, and the
					// row names the subagents and messages.
					continue
				}
				st.session = &r
			case "message":
				st.messages[r.ID] = &r
			case "part":
				st.parts[r.ID] = &r
			case "session_message":
				st.v2[r.ID] = &r
			default:
				st.bad++
			}
		}
	}
	st.prune()
	return st
}

// prune leaves out the messages that the newest session row does not
// list (opencode deleted them: a revert), with their parts, and counts
// the rows that stand.
func (st *sessionState) prune() {
	if st.session != nil && st.session.MessageIDs != nil {
		stand := map[string]bool{}
		for _, id := range st.session.MessageIDs {
			stand[id] = true
		}
		for _, m := range []map[string]*row{st.messages, st.v2} {
			for id := range m {
				if !stand[id] {
					delete(m, id)
					st.dropped++
				}
			}
		}
		for id, p := range st.parts {
			if !stand[p.MessageID] {
				delete(st.parts, id)
			}
		}
	}
	st.ids = int64(len(st.messages) + len(st.parts) + len(st.v2))
	if st.session != nil {
		st.ids++
	}
}

// decodeRow decodes a database record.
func decodeRow(b []byte) ([]row, error) {
	var r row
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return []row{r}, nil
}

// ordered returns the messages in (time_created, id) order, as opencode
// orders them, with the session_message rows among them by
// time_created (in seq order among themselves), and each message's parts
// in id order.
func (st *sessionState) ordered() ([]*row, map[string][]*row) {
	msgs := make([]*row, 0, len(st.messages))
	for _, m := range st.messages {
		msgs = append(msgs, m)
	}
	slices.SortFunc(msgs, func(a, b *row) int {
		return cmp.Or(cmp.Compare(a.TimeCreated, b.TimeCreated), cmp.Compare(a.ID, b.ID))
	})
	if len(st.v2) > 0 {
		v2 := make([]*row, 0, len(st.v2))
		for _, m := range st.v2 {
			v2 = append(v2, m)
		}
		slices.SortFunc(v2, func(a, b *row) int { return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID)) })
		var merged []*row
		i := 0
		for _, m := range v2 {
			for i < len(msgs) && msgs[i].TimeCreated <= m.TimeCreated {
				merged = append(merged, msgs[i])
				i++
			}
			merged = append(merged, m)
		}
		msgs = append(merged, msgs[i:]...)
	}
	parts := map[string][]*row{}
	for _, p := range st.parts {
		parts[p.MessageID] = append(parts[p.MessageID], p)
	}
	for _, ps := range parts {
		slices.SortFunc(ps, func(a, b *row) int { return cmp.Compare(a.ID, b.ID) })
	}
	return msgs, parts
}

// sessionRecords returns the records of a session's files, in order,
// each record's data as a row (a file of the JSON tree put in that shape,
// see treeRow), and the decoder of those.
func sessionRecords(files []engine.ImportFile) ([]engine.ImportRecord, [][]byte, func([]byte) ([]row, error)) {
	var (
		recs  []engine.ImportRecord
		datas [][]byte
	)
	for _, f := range files {
		for _, r := range f.Records {
			d := r.Data
			if r.Kind == exchange.ImportDoc {
				d = treeRow(r.File, d)
			}
			recs = append(recs, r)
			datas = append(datas, d)
		}
	}
	return recs, datas, decodeRow
}

// message is the data of a message row (design section 1.4).
type message struct {
	Role       string `json:"role"`
	ParentID   string `json:"parentID"`
	ModelID    string `json:"modelID"`
	ProviderID string `json:"providerID"`
	Agent      string `json:"agent"`
	Summary    any    `json:"summary"` // a bool on an assistant message, an object on a user one
	Finish     string `json:"finish"`
	Time       struct {
		Created   int64  `json:"created"`
		Completed *int64 `json:"completed"`
	} `json:"time"`
	Tokens *tokens `json:"tokens"`
	Error  *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
	Path *struct {
		Cwd string `json:"cwd"`
	} `json:"path"`
}

// isSummary reports whether an assistant message is a compaction's
// summary.
func (m *message) isSummary() bool { b, _ := m.Summary.(bool); return b }

// tokens is opencode's token count: input without the cache, output
// without reasoning.
type tokens struct {
	Input     int64 `json:"input"`
	Output    int64 `json:"output"`
	Reasoning int64 `json:"reasoning"`
	Cache     struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// usage normalizes t as codec/llm says: Input with the cached tokens in
// it, Output with the reasoning.
func (t *tokens) usage() engine.Usage {
	return engine.Usage{Input: t.Input + t.Cache.Read + t.Cache.Write, Output: t.Output + t.Reasoning, Reasoning: t.Reasoning,
		CacheRead: t.Cache.Read, CacheCreation: t.Cache.Write}
}

func (t *tokens) zero() bool { return *t == tokens{} }

// part is the data of a part row.
type part struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Synthetic bool            `json:"synthetic"`
	Ignored   bool            `json:"ignored"`
	Time      *partTime       `json:"time"`
	Metadata  json.RawMessage `json:"metadata"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	State     *toolState      `json:"state"`
	Snapshot  string          `json:"snapshot"`
	Reason    string          `json:"reason"`
	Tokens    *tokens         `json:"tokens"`
	Cost      float64         `json:"cost"`
	Mime      string          `json:"mime"`
	Filename  string          `json:"filename"`
	URL       string          `json:"url"`
	Error     *struct {
		Name string `json:"name"`
		Data struct {
			Message    string `json:"message"`
			StatusCode int    `json:"statusCode"`
		} `json:"data"`
	} `json:"error"`
}

type partTime struct {
	Start   int64 `json:"start,omitempty"`
	End     int64 `json:"end,omitempty"`
	Created int64 `json:"created,omitempty"`
}

// toolState is a tool part's state.
type toolState struct {
	Status   string          `json:"status"`
	Input    json.RawMessage `json:"input"`
	Output   string          `json:"output"`
	Error    string          `json:"error"`
	Title    string          `json:"title"`
	Metadata json.RawMessage `json:"metadata"`
	Time     *partTime       `json:"time"`
}

// userText sorts the text parts of a user message: prompt is the text
// typed (neither synthetic nor ignored), meta the rest, compaction
// whether a compaction part is there.
func userText(ps []part) (prompt, meta []string, compaction bool) {
	for _, p := range ps {
		switch {
		case p.Type == "compaction":
			compaction = true
		case p.Type != "text" || p.Text == "":
		case p.Synthetic || p.Ignored:
			meta = append(meta, p.Text)
		default:
			prompt = append(prompt, p.Text)
		}
	}
	return prompt, meta, compaction
}

// keptParts are the part types kept as records, known.
var keptParts = map[string]bool{"step-start": true, "patch": true, "snapshot": true, "agent": true, "subtask": true}

// v2Data is the data of a session_message row (design section 1.3, "2.x
// tables"; the types user, assistant, system, synthetic, shell and
// compaction, as 1.18.33's session.next.* handlers make them).
type v2Data struct {
	Time struct {
		Created   int64  `json:"created"`
		Completed *int64 `json:"completed"`
	} `json:"time"`
	Text  string `json:"text"`
	Agent string `json:"agent"`
	Model *struct {
		ID         string `json:"id"`
		ProviderID string `json:"providerID"`
	} `json:"model"`
	Content []v2Block `json:"content"`
	Finish  string    `json:"finish"`
	Cost    float64   `json:"cost"`
	Tokens  *tokens   `json:"tokens"`
	// A user row's attachments.
	Files  json.RawMessage `json:"files"`
	Agents json.RawMessage `json:"agents"`
	// A shell row: a command the user ran (its call id, command and
	// output).
	CallID  string `json:"callID"`
	Command string `json:"command"`
	Output  string `json:"output"`
	// A compaction row: why, and the summary the session goes on from.
	Reason  string `json:"reason"`
	Summary string `json:"summary"`
}

// attached reports whether raw holds attachments (a non-empty array).
func attached(raw json.RawMessage) bool {
	var v []json.RawMessage
	return json.Unmarshal(raw, &v) == nil && len(v) > 0
}

// v2Block is one block of an assistant row's content.
type v2Block struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Text     string          `json:"text"`
	Name     string          `json:"name"`
	Provider json.RawMessage `json:"provider"`
	State    *struct {
		Status      string          `json:"status"`
		Input       json.RawMessage `json:"input"`
		Error       string          `json:"error"`
		Content     []v2Block       `json:"content"`
		OutputPaths json.RawMessage `json:"outputPaths"`
		Structured  json.RawMessage `json:"structured"`
	} `json:"state"`
	Time *struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
}

// text joins the text blocks of a tool's content.
func blockText(bs []v2Block) string {
	var out []string
	for _, b := range bs {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return strings.Join(out, "\n")
}

// decodeLenient decodes data, a row's data, into v as far as it goes: a
// member of the wrong type (a tool state that is a string, a time that
// is no number) is left as it was and the rest decoded, as
// encoding/json does. ok reports whether data decoded at all, odd
// whether a member was of the wrong type.
func decodeLenient(data []byte, v any) (ok, odd bool) {
	err := json.Unmarshal(data, v)
	if err == nil {
		return true, false
	}
	var te *json.UnmarshalTypeError
	return errors.As(err, &te), true
}

// oddShape returns why the data of a row of table is not of the shape
// opencode writes (the first member of the wrong type), or "".
func oddShape(table string, data []byte) string {
	var v any
	switch table {
	case "message":
		v = new(message)
	case "part":
		v = new(part)
	case "session_message":
		v = new(v2Data)
	default:
		return ""
	}
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if err == nil || !errors.As(err, &te) {
		return ""
	}
	want := "a number"
	switch te.Type.Kind() {
	case reflect.Struct, reflect.Map, reflect.Pointer:
		want = "an object"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "a boolean"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Interface:
		want = "another value"
	}
	field := te.Field
	if field == "" {
		field = "data"
	} else {
		field = "data." + field
	}
	return fmt.Sprintf("%s is a JSON %s, not %s", field, te.Value, want)
}

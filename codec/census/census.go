package census

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Counts are the numbers a data-loss check compares. A field that a side
// cannot measure is NA.
type Counts struct {
	// Records is the number of source records read (lines, meta files,
	// spilled outputs, documents); ParseErrors the records that were not
	// valid JSON and were skipped.
	Records     int64 `json:"records"`
	ParseErrors int64 `json:"parse_errors"`
	// UserPrompts are the prompts a person typed (not injected context,
	// not tool results, not compaction summaries); MetaUser the injected
	// and compaction-summary user messages.
	UserPrompts int64 `json:"user_prompts"`
	MetaUser    int64 `json:"meta_user"`
	// Assistant is the number of assistant text messages (text blocks);
	// Responses the number of model responses (Claude Code: distinct
	// message.id + requestId; Codex: model turns).
	Assistant int64 `json:"assistant_messages"`
	Responses int64 `json:"responses"`
	Thinking  int64 `json:"thinking"`
	// ToolCalls and ToolResults are distinct call ids of calls and of
	// results.
	ToolCalls   int64 `json:"tool_calls"`
	ToolResults int64 `json:"tool_results"`
	Errors      int64 `json:"errors"`
	// UUIDs is the number of distinct record ids; CallIDs of distinct
	// tool call ids over calls and results.
	UUIDs   int64 `json:"uuids"`
	CallIDs int64 `json:"call_ids"`
	// Tokens, with Anthropic semantics: In excludes cache reads and
	// writes.
	TokensIn      int64 `json:"tokens_in"`
	TokensOut     int64 `json:"tokens_out"`
	CacheRead     int64 `json:"cache_read"`
	CacheCreation int64 `json:"cache_creation"`
	Subagents     int64 `json:"subagents"`
	// Kept is the number of records without a timeline meaning of their
	// own (snapshots, progress, hooks, titles) kept verbatim; Unknown
	// those of a type the importer does not know.
	Kept    int64 `json:"kept"`
	Unknown int64 `json:"unknown"`
}

// NA marks a count a side cannot measure.
const NA = -1

// Row is one line of a comparison.
type Row struct {
	Name   string
	Source int64
	Result int64
	// Lost is set when the result has fewer than the source; Differs when
	// it has another number.
	Lost, Differs bool
}

// field lists the compared fields in table order.
func fields(c *Counts) []struct {
	name string
	v    *int64
	// info fields are shown but never a loss.
	info bool
} {
	return []struct {
		name string
		v    *int64
		info bool
	}{
		{"records", &c.Records, true},
		{"parse errors", &c.ParseErrors, true},
		{"user prompts", &c.UserPrompts, false},
		{"meta/summary user messages", &c.MetaUser, false},
		{"assistant messages", &c.Assistant, false},
		{"model responses", &c.Responses, false},
		{"thinking blocks", &c.Thinking, false},
		{"tool calls", &c.ToolCalls, false},
		{"tool results", &c.ToolResults, false},
		{"errors", &c.Errors, false},
		{"distinct uuids", &c.UUIDs, false},
		{"distinct call ids", &c.CallIDs, false},
		{"tokens in", &c.TokensIn, false},
		{"tokens out", &c.TokensOut, false},
		{"cache read", &c.CacheRead, false},
		{"cache creation", &c.CacheCreation, false},
		{"subagents", &c.Subagents, false},
		{"records kept", &c.Kept, false},
		{"unknown records kept", &c.Unknown, false},
	}
}

// Compare lines up source and result.
func Compare(src, res Counts) []Row {
	a, b := fields(&src), fields(&res)
	rows := make([]Row, len(a))
	for i := range a {
		r := Row{Name: a[i].name, Source: *a[i].v, Result: *b[i].v}
		if !a[i].info && r.Source != NA && r.Result != NA && r.Source != r.Result {
			r.Differs = true
			r.Lost = r.Result < r.Source
		}
		rows[i] = r
	}
	return rows
}

// Lossless reports whether no row lost or changed anything.
func Lossless(rows []Row) bool {
	for _, r := range rows {
		if r.Differs {
			return false
		}
	}
	return true
}

// WriteTable writes rows as a table: names left-aligned, the two columns
// of numbers right-aligned under their titles, and LOST or DIFFERS after a
// row that did not survive.
func WriteTable(w io.Writer, srcTitle, resTitle string, rows []Row) error {
	nw, aw, bw := 0, len(srcTitle), len(resTitle)
	for _, r := range rows {
		nw = max(nw, len(r.Name))
		aw = max(aw, len(num(r.Source)))
		bw = max(bw, len(num(r.Result)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %-*s  %*s  %*s\n", nw, "", aw, srcTitle, bw, resTitle)
	for _, r := range rows {
		mark := ""
		switch {
		case r.Lost:
			mark = "  LOST"
		case r.Differs:
			mark = "  DIFFERS"
		}
		fmt.Fprintf(&b, "  %-*s  %*s  %*s%s\n", nw, r.Name, aw, num(r.Source), bw, num(r.Result), mark)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func num(n int64) string {
	if n == NA {
		return "n/a"
	}
	return strconv.FormatInt(n, 10)
}

// Add adds o to c field by field (NA stays NA on either side).
func (c *Counts) Add(o Counts) {
	a, b := fields(c), fields(&o)
	for i := range a {
		switch {
		case *a[i].v == NA || *b[i].v == NA:
			*a[i].v = NA
		default:
			*a[i].v += *b[i].v
		}
	}
}

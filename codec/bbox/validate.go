package bbox

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Severity grades a diagnostic.
type Severity uint8

// Severities. An error means the document cannot be trusted for replay or
// export; a warning means something is suspicious or incomplete.
const (
	Warning Severity = iota
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// MarshalText encodes the severity as "error" or "warning".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Diagnostic is one finding of Validate, positioned at a 1-based line and
// byte column of the source (column 1 when the whole line is meant).
type Diagnostic struct {
	File     string   `json:"file,omitempty"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
}

// String formats d as "file:line:col: severity CODE: message".
func (d Diagnostic) String() string {
	file := d.File
	if file == "" {
		file = "-"
	}
	return fmt.Sprintf("%s:%d:%d: %s %s: %s", file, d.Line, d.Col, d.Severity, d.Code, d.Message)
}

// Diagnostic codes. Each is stable; tests pin their messages.
const (
	CodeHeaderUnclosed   = "E101" // header opened with --- but never closed
	CodeHeaderMalformed  = "E102" // header line is not "key: value"
	CodeHeaderMissing    = "E103" // required key (format, id, repo_sha) missing or empty
	CodeHeaderDuplicate  = "E104" // key given twice
	CodeHeaderFormat     = "E105" // format is not bbox/N
	CodeHeaderYAML       = "E106" // header is not valid YAML
	CodeUnknownCallID    = "E201" // o: (or a completion) refers to an id no call introduced
	CodeDuplicateID      = "E202" // two calls introduce the same id
	CodeStepBackwards    = "E203" // step= smaller than an earlier step of the same thread
	CodeBadTimestamp     = "E204" // ts= is not RFC 3339
	CodeBadElapsed       = "E205" // # t= is not HH:MM:SS
	CodeBadNumber        = "E206" // step, latency_ms, attempt, bytes not numbers
	CodeNoHeader         = "W101" // no header: a fragment, not replayable
	CodeFormatVersion    = "W102" // format bbox/N other than bbox/1
	CodeRepoSHA          = "W103" // repo_sha not a 4..64 digit hex commit
	CodeUnknownPrefix    = "W201" // line with no known prefix
	CodeToolNotCompleted = "W202" // t!: with no later completion
	CodeBadBlob          = "W203" // @blob hash not 64 hex digits (or elided)
	CodeOrphanIndent     = "W204" // indented line with nothing to continue
	CodeLateHeader       = "W205" // --- after line 1
	CodeProgressNoStart  = "W206" // t~: for an id or span never started
	CodeBadLevel         = "W207" // level= not debug|info|warn|error
)

// validator carries the state of one Validate pass.
type validator struct {
	file  string
	diags []Diagnostic

	calls    map[string]*callState // by id
	spans    map[string]*callState // by span (t!/t~/t with span=)
	lastStep map[string]int        // by tid
	stepLine map[string]int
}

type callState struct {
	line int
	kind Kind
	open bool // a t! waiting for its completion
	text bool // the call line had a call part (not only a result)
}

func (v *validator) add(line, col int, sev Severity, code, format string, args ...any) {
	if col < 1 {
		col = 1
	}
	v.diags = append(v.diags, Diagnostic{File: v.file, Line: line, Col: col, Severity: sev,
		Code: code, Message: fmt.Sprintf(format, args...)})
}

// Validate checks doc and returns its diagnostics in source order. file
// names the source in each diagnostic.
func Validate(doc *Document, file string) []Diagnostic {
	v := &validator{file: file, calls: map[string]*callState{}, spans: map[string]*callState{},
		lastStep: map[string]int{}, stepLine: map[string]int{}}
	v.header(doc)
	for i := range doc.Lines {
		v.line(&doc.Lines[i], i, doc)
	}
	// Calls started and never completed.
	for _, l := range doc.Lines {
		if l.Kind != KindToolStart {
			continue
		}
		m := l.Meta()
		var c *callState
		if m.ID != "" {
			c = v.calls[m.ID]
		} else if m.Span != "" {
			c = v.spans[m.Span]
		}
		if c != nil && c.open && c.line == l.Pos.Line {
			what := "id=" + m.ID
			if m.ID == "" {
				what = "span=" + m.Span
			}
			v.add(l.Pos.Line, 1, Warning, CodeToolNotCompleted,
				"t!:%s %s is never completed by a t: or o: line", l.Name, what)
		} else if m.ID == "" && m.Span == "" {
			v.add(l.Pos.Line, 1, Warning, CodeToolNotCompleted,
				"t!:%s has no id= or span=, so nothing can complete it", l.Name)
		}
	}
	sortDiags(v.diags)
	return v.diags
}

func sortDiags(d []Diagnostic) {
	sort.SliceStable(d, func(i, j int) bool {
		return d[i].Line < d[j].Line || d[i].Line == d[j].Line && d[i].Col < d[j].Col
	})
}

func (v *validator) header(doc *Document) {
	h := doc.Header
	if h == nil {
		v.add(1, 1, Warning, CodeNoHeader, "no header: a fragment (a replayable file starts with ---, format, id and repo_sha)")
		return
	}
	if !h.Closed {
		v.add(1, 1, Error, CodeHeaderUnclosed, "header opened here is never closed with ---")
	}
	seen := map[string]int{}
	var text strings.Builder
	for _, l := range h.Lines {
		switch l.Kind {
		case HeaderRaw:
			v.add(l.Line, 1, Error, CodeHeaderMalformed, "header line is not \"key: value\": %q", l.Text)
		case HeaderPair:
			if first, ok := seen[l.Key]; ok {
				v.add(l.Line, 1, Error, CodeHeaderDuplicate, "header key %q given twice (first on line %d)", l.Key, first)
			} else {
				seen[l.Key] = l.Line
			}
		}
	}
	// YAML syntax, only when every line has the expected shape (otherwise
	// the line-level error above says more).
	for _, l := range h.Lines {
		if l.Kind == HeaderRaw {
			text.Reset()
			break
		}
		var buf []byte
		text.Write(AppendHeaderLine(buf, &l))
		text.WriteByte('\n')
	}
	if text.Len() > 0 {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(text.String()), &n); err != nil {
			line, msg := yamlErrLine(err.Error())
			// yaml.v3 numbers the lines of its "did not find expected"
			// errors from 0 (they carry the context mark), others from 1.
			if strings.HasPrefix(msg, "did not find expected") {
				line++
			}
			file := 1
			if line > 0 && line <= len(h.Lines) {
				file = h.Lines[line-1].Line
			}
			v.add(file, 1, Error, CodeHeaderYAML, "header is not valid YAML: %s", msg)
		}
	}
	closeLine := 1
	if len(h.Lines) > 0 {
		closeLine = h.Lines[len(h.Lines)-1].Line + 1
	}
	for _, key := range Required {
		raw, ok := h.Raw(key)
		if !ok || scalar(raw) == "" {
			at := closeLine
			if ok {
				at = seen[key]
			}
			v.add(at, 1, Error, CodeHeaderMissing, "header is missing required key %q", key)
		}
	}
	if f, ok := h.Raw("format"); ok && f != "" {
		f = scalar(f)
		switch {
		case f == "bbox/1" || f == "bbox/1.0":
		case strings.HasPrefix(f, "bbox/"):
			v.add(seen["format"], 1, Warning, CodeFormatVersion, "format %q: this reader implements bbox/1", f)
		default:
			v.add(seen["format"], 1, Error, CodeHeaderFormat, "format %q is not bbox/N", f)
		}
	}
	if sha := h.Get("repo_sha"); sha != "" {
		if len(sha) < 4 || len(sha) > 64 || !isHex(sha) {
			v.add(seen["repo_sha"], 1, Warning, CodeRepoSHA, "repo_sha %q is not a 4 to 64 digit hex commit", sha)
		}
	}
}

// yamlErrLine pulls "line N" out of a yaml.v3 error message.
func yamlErrLine(msg string) (int, string) {
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return 0, msg
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// introduces reports whether lines of kind k introduce call ids.
func introduces(k Kind) bool {
	switch k {
	case KindTool, KindToolStart, KindSubagent, KindMCP, KindQuestion, KindSkill:
		return true
	}
	return false
}

func (v *validator) line(l *Line, idx int, doc *Document) {
	switch l.Kind {
	case KindBlank:
		return
	case KindUnknown:
		if isSpace(l.Body[0]) {
			v.add(l.Pos.Line, 1, Warning, CodeOrphanIndent, "indented line follows a blank line, so it continues nothing")
			return
		}
		if trimSpace(l.Body) == "---" {
			if doc.Header != nil || idx > 0 {
				v.add(l.Pos.Line, 1, Warning, CodeLateHeader, "--- must be on line 1 to open the header; this line is not a header")
			}
			return
		}
		p := l.Body
		if i := strings.IndexAny(p, " \t"); i >= 0 {
			p = p[:i]
		}
		if len(p) > 12 {
			p = p[:12] + "…"
		}
		v.add(l.Pos.Line, 1, Warning, CodeUnknownPrefix, "unknown prefix %q (known: u a t t! t~ o s p m r x c q th td # @)", p)
		return
	case KindComment:
		v.comment(l)
		return
	}
	v.fields(l)
	v.calls1(l)
}

// fieldCol returns the source column of byte offset off in s, where s
// starts at column base.
func fieldCol(base, off int) int {
	if base == 0 {
		return 1
	}
	return base + off
}

// fields checks the syntax of metadata values and blob pointers.
func (v *validator) fields(l *Line) {
	check := func(s string, base int, metaOnly bool) {
		var fields []Field
		if metaOnly {
			fields = l.TrailingFields()
		} else {
			fields, _ = Fields(s)
		}
		for i, f := range fields {
			col := fieldCol(base, f.Start)
			switch f.Key {
			case "ts":
				if !validTS(f.Value) {
					v.add(l.Pos.Line, col, Error, CodeBadTimestamp, "ts=%s is not an RFC 3339 time such as 2025-12-18T03:21:08Z", f.Value)
				}
			case "step":
				n, err := strconv.Atoi(f.Value)
				if err != nil || n < 0 {
					v.add(l.Pos.Line, col, Error, CodeBadNumber, "step=%s is not a non-negative integer", f.Value)
					continue
				}
				v.step(l, n, col)
			case "latency_ms":
				if _, err := strconv.ParseFloat(f.Value, 64); err != nil {
					v.add(l.Pos.Line, col, Error, CodeBadNumber, "latency_ms=%s is not a number", f.Value)
				}
			case "attempt":
				if !validAttempt(f.Value) {
					v.add(l.Pos.Line, col, Error, CodeBadNumber, "attempt=%s is not N or N/M", f.Value)
				}
			case "level":
				switch f.Value {
				case "debug", "info", "warn", "error":
				default:
					v.add(l.Pos.Line, col, Warning, CodeBadLevel, "level=%s is not debug, info, warn or error", f.Value)
				}
			case "":
				if f.Value == "@blob" && !f.Quoted {
					v.blob(l, fields[i+1:], base)
				}
			}
		}
	}
	if l.Kind.HasResult() || l.Kind.Named() {
		check(l.Body, l.Pos.BodyCol, false)
	} else {
		check(l.Body, l.Pos.BodyCol, true)
	}
	if l.Arrow {
		rf, _ := Fields(l.Result)
		for i, f := range rf {
			if f.Key == "" && f.Value == "@blob" && !f.Quoted {
				v.blob(l, rf[i+1:], l.Pos.ResultCol)
			}
		}
	}
}

func (v *validator) blob(l *Line, rest []Field, base int) {
	var sha *Field
	for i := range rest {
		f := &rest[i]
		if f.Key == "" {
			break
		}
		switch f.Key {
		case "sha256":
			sha = f
		case "bytes":
			if n, err := strconv.ParseInt(f.Value, 10, 64); err != nil || n < 0 {
				v.add(l.Pos.Line, fieldCol(base, f.Start), Error, CodeBadNumber, "@blob bytes=%s is not a byte count", f.Value)
			}
		}
	}
	if sha == nil {
		v.add(l.Pos.Line, 1, Warning, CodeBadBlob, "@blob without sha256=")
		return
	}
	h := sha.Value
	col := fieldCol(base, sha.Start)
	elided := strings.HasSuffix(h, "...") || strings.HasSuffix(h, "…")
	h = strings.TrimSuffix(strings.TrimSuffix(h, "..."), "…")
	switch {
	case h != "" && !isHex(h):
		v.add(l.Pos.Line, col, Warning, CodeBadBlob, "@blob sha256=%s is not hexadecimal", sha.Value)
	case elided:
		v.add(l.Pos.Line, col, Warning, CodeBadBlob, "@blob sha256=%s is elided; the blob cannot be resolved", sha.Value)
	case len(h) != 64:
		v.add(l.Pos.Line, col, Warning, CodeBadBlob, "@blob sha256=%s has %d hex digits, want 64", sha.Value, len(h))
	}
}

func validTS(s string) bool {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return true
	}
	return false
}

func validAttempt(s string) bool {
	a, b, slash := strings.Cut(s, "/")
	n, err := strconv.Atoi(a)
	if err != nil || n < 0 {
		return false
	}
	if slash {
		m, err := strconv.Atoi(b)
		if err != nil || m < n {
			return false
		}
	}
	return true
}

func (v *validator) step(l *Line, n, col int) {
	tid := l.Meta().Tid
	if tid == "" {
		tid = "1"
	}
	if last, ok := v.lastStep[tid]; ok && n < last {
		v.add(l.Pos.Line, col, Error, CodeStepBackwards, "step=%d goes backwards (step=%d on line %d)", n, last, v.stepLine[tid])
	}
	v.lastStep[tid] = n
	v.stepLine[tid] = l.Pos.Line
}

// comment checks the structured comment forms: # t=, # metrics, # budget.
func (v *validator) comment(l *Line) {
	b := l.Body
	if rest, ok := strings.CutPrefix(b, "t="); ok {
		t := rest
		if i := strings.IndexAny(t, " \t"); i >= 0 {
			t = t[:i]
		}
		if !validElapsed(t) {
			v.add(l.Pos.Line, l.Pos.BodyCol, Error, CodeBadElapsed, "# t=%s is not elapsed time HH:MM:SS", t)
		}
		return
	}
	if rest, ok := strings.CutPrefix(b, "metrics"); ok && (rest == "" || isSpace(rest[0])) {
		base := l.Pos.BodyCol + len("metrics")
		for _, f := range mustFields(rest) {
			if f.Key == "step" {
				n, err := strconv.Atoi(f.Value)
				if err != nil || n < 0 {
					v.add(l.Pos.Line, base+f.Start, Error, CodeBadNumber, "step=%s is not a non-negative integer", f.Value)
				}
			}
		}
	}
}

func mustFields(s string) []Field {
	f, _ := Fields(s)
	return f
}

func validElapsed(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		if len(p) < 2 {
			return false
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || i > 0 && (len(p) != 2 || n > 59) {
			return false
		}
	}
	return true
}

// calls1 tracks call ids and spans: introductions, completions, references.
func (v *validator) calls1(l *Line) {
	m := l.Meta()
	idCol := func(key string) int {
		if f, ok := Lookup(l.Body, key); ok {
			return fieldCol(l.Pos.BodyCol, f.Start)
		}
		return 1
	}
	hasCall := callPart(l.Body)
	switch l.Kind {
	case KindObservation:
		if m.ID == "" {
			return
		}
		c, ok := v.calls[m.ID]
		if !ok {
			v.add(l.Pos.Line, idCol("id"), Error, CodeUnknownCallID, "o: refers to id=%s, which no earlier call introduced", m.ID)
			return
		}
		if l.Arrow {
			c.open = false
		}
		return
	case KindToolProgress:
		if m.ID != "" {
			if _, ok := v.calls[m.ID]; !ok {
				v.add(l.Pos.Line, idCol("id"), Warning, CodeProgressNoStart, "t~: reports on id=%s, which no earlier call started", m.ID)
			}
		} else if m.Span != "" {
			if _, ok := v.spans[m.Span]; !ok {
				v.add(l.Pos.Line, idCol("span"), Warning, CodeProgressNoStart, "t~: reports on span=%s, which no earlier call started", m.Span)
			}
		}
		return
	}
	if !introduces(l.Kind) {
		return
	}
	// Spans: a t: completes an open t! of the same span.
	if m.Span != "" && (l.Kind == KindTool || l.Kind == KindToolStart || l.Kind == KindSubagent) {
		if s, ok := v.spans[m.Span]; ok && s.open && l.Kind != KindToolStart {
			s.open = false
		} else if l.Kind == KindToolStart || !ok {
			v.spans[m.Span] = &callState{line: l.Pos.Line, kind: l.Kind, open: l.Kind == KindToolStart}
		}
	}
	if m.ID == "" {
		return
	}
	c, ok := v.calls[m.ID]
	switch {
	case !ok:
		v.calls[m.ID] = &callState{line: l.Pos.Line, kind: l.Kind, open: l.Kind == KindToolStart, text: hasCall}
	case c.open && l.Kind == KindTool:
		c.open = false // t: completing its t!
	case !hasCall && l.Arrow && c.kind == l.Kind:
		// A result-only line for an earlier call of the same kind:
		// q: id=q_1 → [selected: OAuth], x:explore id=sub_1 → summary=…
		c.open = false
	case l.Kind == KindToolStart && m.Attempt != "":
		c.open = true // a retry of the same call
		c.line = l.Pos.Line
	default:
		v.add(l.Pos.Line, idCol("id"), Error, CodeDuplicateID, "id=%s was already introduced on line %d", m.ID, c.line)
	}
}

// callPart reports whether body carries a call part beyond metadata
// fields, so its line introduces (or restarts) a call rather than only
// reporting a result (x:explore id=sub_1 → summary=…).
func callPart(body string) bool {
	has := false
	eachField(body, func(f Field) bool {
		switch f.Key {
		case "id", "tid", "span", "parent", "step", "ts", "attempt", "latency_ms", "level":
			return true
		}
		if strings.HasPrefix(f.Key, "extra.") {
			return true
		}
		has = true
		return false
	}, nil)
	return has
}

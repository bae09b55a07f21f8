package bbox

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

const hdr = "---\nformat: bbox/1\nid: s1\nrepo_sha: 7a3b2c1\n---\n"

// TestDiagnostics pins the exact diagnostic for each malformed input.
func TestDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"clean", hdr + "u: hi\nt:read id=c1 a.go → [ok]\no: id=c1 → done\n", nil},
		{"missing header fields", "---\nformat: bbox/1\n---\nu: hi\n", []string{
			`f:3:1: error E103: header is missing required key "id"`,
			`f:3:1: error E103: header is missing required key "repo_sha"`,
		}},
		{"empty required value", "---\nformat: bbox/1\nid: \"\"\nrepo_sha: abcdef1\n---\n", []string{
			`f:3:1: error E103: header is missing required key "id"`,
		}},
		{"unclosed header", "---\nformat: bbox/1\nid: x\nrepo_sha: abcdef1\nu: hi\n", []string{
			`f:1:1: error E101: header opened here is never closed with ---`,
		}},
		{"malformed header line", "---\nformat: bbox/1\nid: x\nrepo_sha: abcdef1\njust words\n---\n", []string{
			`f:5:1: error E102: header line is not "key: value": "just words"`,
		}},
		{"duplicate header key", "---\nformat: bbox/1\nid: a\nid: b\nrepo_sha: abcdef1\n---\n", []string{
			`f:4:1: error E104: header key "id" given twice (first on line 3)`,
		}},
		{"bad yaml", "---\nformat: bbox/1\nid: x\nrepo_sha: abcdef1\ntoolset: {git: 2.45\n---\n", []string{
			`f:5:1: error E106: header is not valid YAML: did not find expected ',' or '}'`,
		}},
		{"wrong format", "---\nformat: json\nid: x\nrepo_sha: abcdef1\n---\n", []string{
			`f:2:1: error E105: format "json" is not bbox/N`,
		}},
		{"future version", "---\nformat: bbox/2\nid: x\nrepo_sha: abcdef1\n---\n", []string{
			`f:2:1: warning W102: format "bbox/2": this reader implements bbox/1`,
		}},
		{"bad repo_sha", "---\nformat: bbox/1\nid: x\nrepo_sha: main\n---\n", []string{
			`f:4:1: warning W103: repo_sha "main" is not a 4 to 64 digit hex commit`,
		}},
		{"no header", "u: hi\n", []string{
			`f:1:1: warning W101: no header: a fragment (a replayable file starts with ---, format, id and repo_sha)`,
		}},
		{"late header", "u: hi\n---\n", []string{
			`f:1:1: warning W101: no header: a fragment (a replayable file starts with ---, format, id and repo_sha)`,
			`f:2:1: warning W205: --- must be on line 1 to open the header; this line is not a header`,
		}},
		{"unknown prefix", hdr + "z: what\n", []string{
			`f:6:1: warning W201: unknown prefix "z:" (known: u a t t! t~ o s p m r x c q th td # @)`,
		}},
		{"orphan indent", hdr + "u: hi\n\n  dangling\n", []string{
			`f:8:1: warning W204: indented line follows a blank line, so it continues nothing`,
		}},
		{"observation without call", hdr + "o: id=call_9 → [ok]\n", []string{
			`f:6:4: error E201: o: refers to id=call_9, which no earlier call introduced`,
		}},
		{"observation before call", hdr + "o: id=c1 → [ok]\nt:read id=c1 x → y\n", []string{
			`f:6:4: error E201: o: refers to id=c1, which no earlier call introduced`,
		}},
		{"tool never completed", hdr + "t!:test id=c1 cargo test → [running]\n", []string{
			`f:6:1: warning W202: t!:test id=c1 is never completed by a t: or o: line`,
		}},
		{"tool start without id", hdr + "t!:test cargo test → [running]\n", []string{
			`f:6:1: warning W202: t!:test has no id= or span=, so nothing can complete it`,
		}},
		{"completed by span", hdr + "t!:test span=t200 cargo test → [running]\nt~:test span=t200 \"[1/2]\"\nt:test span=t200 latency_ms=34200 → [ok]\n", nil},
		{"retry by span", hdr + "t!:git span=t1 push → [running]\nt:git span=t1 attempt=1 → [err]\nt!:git span=t1 push → [retry 2/3]\nt:git span=t1 attempt=2 → [ok]\n", nil},
		{"progress without start", hdr + "t~:test span=t9 \"[1/2]\"\n", []string{
			`f:6:9: warning W206: t~: reports on span=t9, which no earlier call started`,
		}},
		{"duplicate id", hdr + "t:read id=c1 a.go → [ok]\nt:read id=c1 b.go → [ok]\n", []string{
			`f:7:8: error E202: id=c1 was already introduced on line 6`,
		}},
		{"question answered", hdr + "q: id=q_1 \"Which?\" options=[\"A\", \"B\"] → [pending]\nq: id=q_1 → [selected: A]\n", nil},
		{"question asked twice", hdr + "q: id=q_1 \"Which?\" → [pending]\nq: id=q_1 \"Again?\" → [pending]\n", []string{
			`f:7:4: error E202: id=q_1 was already introduced on line 6`,
		}},
		{"steps backwards", hdr + "u: a step=2\na: b step=1\n", []string{
			`f:7:6: error E203: step=1 goes backwards (step=2 on line 6)`,
		}},
		{"steps per thread", hdr + "t:rg tid=2 step=5 x → y\nt:rg tid=3 step=1 x → y\n", nil},
		{"bad step", hdr + "u: a step=two\n", []string{
			`f:6:6: error E206: step=two is not a non-negative integer`,
		}},
		{"bad timestamp", hdr + "u: hi ts=2025-12-18\nt:x ts=2025-12-18 03:21:08 → y\n", []string{
			`f:6:7: error E204: ts=2025-12-18 is not an RFC 3339 time such as 2025-12-18T03:21:08Z`,
			`f:7:5: error E204: ts=2025-12-18 is not an RFC 3339 time such as 2025-12-18T03:21:08Z`,
		}},
		{"metadata words in prose are not checked", hdr + "u: use step=five for ts=now in the loop\n", nil},
		{"timestamp with offset ok", hdr + "u: hi ts=2025-12-18T03:21:08.5+02:00\n", nil},
		{"bad elapsed", hdr + "# t=1:5:00\n# t=00:61:00\n# t=100:00:00\n", []string{
			`f:6:3: error E205: # t=1:5:00 is not elapsed time HH:MM:SS`,
			`f:7:3: error E205: # t=00:61:00 is not elapsed time HH:MM:SS`,
		}},
		{"bad latency and attempt", hdr + "t:curl latency_ms=fast attempt=3/2 x → [ok]\n", []string{
			`f:6:8: error E206: latency_ms=fast is not a number`,
			`f:6:24: error E206: attempt=3/2 is not N or N/M`,
		}},
		{"bad level", hdr + "t:test level=loud → [ok]\n", []string{
			`f:6:8: warning W207: level=loud is not debug, info, warn or error`,
		}},
		{"blob not hex", hdr + "t:git diff → @blob sha256=ef56gh78 bytes=12847 mime=text/x-diff\n", []string{
			`f:6:22: warning W203: @blob sha256=ef56gh78 is not hexadecimal`,
		}},
		{"blob full hash", hdr + "t:read a → @blob sha256=" + strings.Repeat("ab", 32) + " bytes=10\n", nil},
		{"blob bad bytes", hdr + "t:read a → @blob sha256=" + strings.Repeat("ab", 32) + " bytes=-1\n", []string{
			`f:6:92: error E206: @blob bytes=-1 is not a byte count`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Parse(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range Validate(doc, "f") {
				got = append(got, d.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			roundTrip(t, tt.name, doc)
		})
	}
}

// TestParseLine pins how lines split into name, body and result,
// including the cases the spec's regexes get wrong.
func TestParseLine(t *testing.T) {
	tests := []struct {
		in                 string
		kind               Kind
		name, body, result string
		arrow              bool
	}{
		{"u: hello", KindUser, "", "hello", "", false},
		{"u:hello", KindUser, "", "hello", "", false},
		{"a: f(x) → y is text", KindAgent, "", "f(x) → y is text", "", false},
		{"t:read src/main.rs → [200 lines]", KindTool, "read", "src/main.rs", "[200 lines]", true},
		{"t:grep \"billing\" type=rs→[4]", KindTool, "grep", `"billing" type=rs`, "[4]", true},
		{"t:read a.go -> 1→[workspace] 2→x", KindTool, "read", "a.go", "1→[workspace] 2→x", true},
		{`t:echo "a → b" → a → b`, KindTool, "echo", `"a → b"`, "a → b", true},
		{`t:echo "say \"→\"" x → ok`, KindTool, "echo", `"say \"→\"" x`, "ok", true},
		{"t!:test id=call-92-x cargo test → [running]", KindToolStart, "test", "id=call-92-x cargo test", "[running]", true},
		{"t~:test span=t200 \"[12/128 passed]\"", KindToolProgress, "test", `span=t200 "[12/128 passed]"`, "", false},
		{"o: id=call_92 → [ok] 128 tests passed", KindObservation, "", "id=call_92", "[ok] 128 tests passed", true},
		{"m: auto", KindMode, "auto", "", "", false},
		{"m:plan   # Plan mode", KindMode, "plan", "# Plan mode", "", false},
		{"c:github.pr create title=\"Add ads\" →", KindMCP, "github.pr", `create title="Add ads"`, "", true},
		{"@wait-approval pr=47 timeout=2h → approved", KindLifecycle, "wait-approval", "pr=47 timeout=2h", "approved", true},
		{"@assess → P0: task", KindLifecycle, "assess", "", "P0: task", true},
		{"@phase explore          # Phase 1", KindLifecycle, "phase", "explore          # Phase 1", "", false},
		{"# t=00:05:23", KindComment, "", "t=00:05:23", "", false},
		{"#", KindComment, "", "", "", false},
		{"th: Let me think → maybe", KindThinking, "", "Let me think → maybe", "", false},
		{"td: [pending] Fix bug [completed] Add test", KindTodos, "", "[pending] Fix bug [completed] Add test", "", false},
		{"the end", KindUnknown, "", "the end", "", false},
		{"t:→x", KindTool, "", "", "x", true},
		{"u: trailing spaces   \r", KindUser, "", "trailing spaces", "", false},
	}
	for _, tt := range tests {
		l := parseLine(tt.in, 1)
		if l.Kind != tt.kind || l.Name != tt.name || l.Body != tt.body || l.Result != tt.result || l.Arrow != tt.arrow {
			t.Errorf("parseLine(%q) = %v %q %q %v %q, want %v %q %q %v %q", tt.in,
				l.Kind, l.Name, l.Body, l.Arrow, l.Result, tt.kind, tt.name, tt.body, tt.arrow, tt.result)
		}
	}
}

func TestFieldsAndMeta(t *testing.T) {
	l := parseLine(`t:search id=call-1_x tid=2 span=s9 parent=p1 step=2 ts=2025-12-18T03:21:11Z attempt=2/3 latency_ms=1200 level=warn extra.cache=hit options=["JWT", "OAuth"] "two words" pattern="tier\|plan" → $185.35`, 1)
	m := l.Meta()
	want := Meta{ID: "call-1_x", Tid: "2", Span: "s9", Parent: "p1", Step: "2", TS: "2025-12-18T03:21:11Z", Attempt: "2/3", LatencyMS: "1200", Level: "warn"}
	if m != want {
		t.Errorf("Meta = %+v, want %+v", m, want)
	}
	f, _ := Fields(l.Body)
	var got []string
	for _, x := range f {
		got = append(got, fmt.Sprintf("%s=%s", x.Key, x.Value))
	}
	if g, w := strings.Join(got, "|"), `id=call-1_x|tid=2|span=s9|parent=p1|step=2|ts=2025-12-18T03:21:11Z|attempt=2/3|latency_ms=1200|level=warn|extra.cache=hit|options=["JWT", "OAuth"]|=two words|pattern=tier\|plan`; g != w {
		t.Errorf("Fields:\n got %s\nwant %s", g, w)
	}
	msg := parseLine("u: What's the price? set x=1 please step=1 ts=2025-12-18T03:21:08Z", 1)
	if got := msg.MessageText(); got != "What's the price? set x=1 please" {
		t.Errorf("MessageText = %q", got)
	}
	if m := msg.Meta(); m.Step != "1" || m.TS != "2025-12-18T03:21:08Z" || m.ID != "" {
		t.Errorf("message Meta = %+v", m)
	}
	inline := parseLine("a: Here's what I found... step=3 # metrics prompt=520 completion=80", 1)
	if got := inline.MessageText(); got != "Here's what I found..." {
		t.Errorf("MessageText with inline comment = %q", got)
	}
}

func TestQuote(t *testing.T) {
	for _, v := range []string{"", "plain", "two words", `a"b`, `back\slash`, `end\`, "tier\\|plan", "new\nline", `\n literal`, "a→b", "x->y", "k=v", "#hash", "[open", "[ok]", "tab\there", `\"`, "\\\n"} {
		q := Quote(v)
		f, _ := Fields(q)
		if len(f) != 1 || f[0].Value != v || f[0].Key != "" {
			t.Errorf("Quote(%q) = %s reads back as %+v", v, q, f)
		}
	}
}

func TestHeaderGet(t *testing.T) {
	doc, err := Parse(strings.NewReader("---\nformat: bbox/1\nid: 'it''s'\nrepo_sha: 0123456 # short\nclient_version: \"2.0.71\"\nskills: [a, b]\nextra.eval_suite: terminalbench\ntoolset:\n  git: 2.45\n---\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := doc.Header
	for k, want := range map[string]string{"id": "it's", "repo_sha": "0123456", "client_version": "2.0.71", "skills": "[a, b]", "toolset": "", "missing": ""} {
		if got := h.Get(k); got != want {
			t.Errorf("Get(%q) = %q, want %q", k, got, want)
		}
	}
	if ex := h.Extra(); len(ex) != 1 || ex[0].Key != "eval_suite" || ex[0].Value != "terminalbench" {
		t.Errorf("Extra = %+v", ex)
	}
	if h.Lines[len(h.Lines)-1].Kind != HeaderNested {
		t.Errorf("nested YAML line kept as %v", h.Lines[len(h.Lines)-1].Kind)
	}
	if d := Validate(doc, "f"); len(d) != 0 {
		t.Errorf("diagnostics: %v", d)
	}
}

// TestCanonical pins the canonical form of untidy input.
func TestCanonical(t *testing.T) {
	in := "---\r\nformat:   bbox/1\r\nid: s\r\nrepo_sha: abcdef1\r\n---\r\nu:hi   \r\nt:  read    a.go   ->   [ok]  \r\nm: auto\r\n#note\r\n\tcont with tab\r\n\r\n   \r\n@start\r\n"
	want := "---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\nu: hi\nt:read a.go → [ok]\nm:auto\n# note\n  cont with tab\n\n\n@start\n"
	doc, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Write(&b, doc, Canonical); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("canonical:\n%q\nwant\n%q", b.String(), want)
	}
	roundTrip(t, "canonical", doc)
}

// TestCheck rejects documents the text cannot represent, naming the line.
func TestCheck(t *testing.T) {
	tests := []struct {
		doc  Document
		want string
	}{
		{Document{Lines: []Line{{Kind: KindUser, Body: "a\nb"}}}, "line 1 (u): holds a line break"},
		{Document{Lines: []Line{{Kind: KindTool, Name: "x", Body: "a → b", Arrow: true, Result: "c"}}}, `line 1 (t): does not read back: "t:x a → b → c"`},
		{Document{Lines: []Line{{Kind: KindTool, Name: "two words"}}}, `line 1 (t): does not read back: "t:two words"`},
		{Document{Lines: []Line{{Kind: KindUser, Body: " lead"}}}, `line 1 (u): does not read back: "u:  lead"`},
		{Document{Lines: []Line{{Kind: KindUnknown, Body: ""}}}, "line 1 (?): would be written as a blank line"},
		{Document{Lines: []Line{{Kind: KindUnknown, Body: "u: hi"}}}, `line 1 (?): does not read back: "u: hi"`},
		{Document{Lines: []Line{{Kind: KindUnknown, Body: "---"}}}, "line 1 (?): a first line --- would open a header"},
		{Document{Lines: []Line{{Kind: KindUser, Body: "x"}, {Kind: KindUnknown, Body: "  indented"}}}, "line 2 (?): an indented line after a non-blank line would continue it"},
		{Document{Lines: []Line{{Kind: KindBlank, More: []string{"x"}}}}, "line 1 (blank): a blank line holds nothing"},
		{Document{Lines: []Line{{Kind: KindAgent, Body: "x", More: []string{"y\r"}}}}, "line 1 (a): continuation 1 holds a line break"},
		{Document{Header: &Header{Lines: []HeaderLine{{Kind: HeaderRaw, Text: "---"}}, Closed: true}}, "header line 1: --- would close the header"},
		{Document{Header: &Header{}, Lines: []Line{{Kind: KindUser, Body: "x"}}}, "header is not closed but body lines follow"},
	}
	for _, tt := range tests {
		err := tt.doc.Check()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check() = %v, want %q", err, tt.want)
		}
		if err := Write(&bytes.Buffer{}, &tt.doc, Canonical); err == nil {
			t.Errorf("Write accepted %+v", tt.doc)
		}
	}
}

func TestReadJSONLErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{\"t\":\"u\",\"c\":\"hi\"}\nnot json\n", "in.jsonl:2: invalid JSON"},
		{"[1,2]\n", "in.jsonl:1: record is not a JSON object"},
		{"{\"c\":\"x\"}\n", `in.jsonl:1: record has no "t" (type) key`},
		{"{\"t\":\"zz\"}\n", `in.jsonl:1: unknown type t="zz"`},
		{"{\"t\":\"u\"}\n{\"t\":\"---\"}\n", "in.jsonl:2: header record must come first"},
		{"{\"t\":\"u\",\"c\":\"x\"} {}\n", "in.jsonl:1: trailing data"},
	}
	for _, tt := range tests {
		_, err := ReadJSONL(strings.NewReader(tt.in), "in.jsonl")
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ReadJSONL(%q) = %v, want prefix %q", tt.in, err, tt.want)
		}
	}
}

func TestStats(t *testing.T) {
	in := hdr + `u: go
t!:test id=c1 cargo test → [running]
t:test id=c1 → [ok]
t:read a.go → [ok] [redacted:api_key]
c:github.issues q=x → [2]
x:explore id=s1 "look" → [launched]
x:explore id=s1 → summary=done
a: done step=4 # metrics prompt=500 completion=50 cached=10 cost=0.001
# metrics step=5 prompt_tokens=20 completion_tokens=5 cost_usd=0.0005
# budget: $50.00 remaining=$47.23 tokens=12847
# tokens_in=2847 tokens_out=1923 cost=$0.08
t:read b → @blob sha256=` + strings.Repeat("0", 64) + "\n"
	doc, _ := Parse(strings.NewReader(in))
	st := ComputeStats(doc)
	if got := fmt.Sprint(st.Tools); got != "[{read 2} {test 1}]" {
		t.Errorf("tools = %s", got)
	}
	if got := fmt.Sprint(st.MCP, st.Subagents); got != "[{github.issues 1}] [{explore 1}]" {
		t.Errorf("mcp, subagents = %s", got)
	}
	if st.Metrics.Lines != 2 || st.Metrics.Prompt != 520 || st.Metrics.Completion != 55 || st.Metrics.Cached != 10 || fmt.Sprintf("%.4f", st.Metrics.CostUSD) != "0.0015" {
		t.Errorf("metrics = %+v", st.Metrics)
	}
	if st.Summary == nil || st.Summary.Prompt != 2847 || st.Summary.Completion != 1923 || st.Summary.CostUSD != 0.08 {
		t.Errorf("summary = %+v", st.Summary)
	}
	if st.Blobs != 1 || st.Redacted != 1 || st.MaxStep != 4 || st.CallIDs != 2 || st.ByKind["t"] != 3 || st.Lines != 17 {
		t.Errorf("stats = %+v", st)
	}
}

func TestScannerLongLine(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	doc, err := Parse(strings.NewReader(hdr + "t:read a → " + long + "\n  more\nu: after"))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Lines) != 2 || doc.Lines[0].Result != long || doc.Lines[0].More[0] != "more" || doc.Lines[1].Body != "after" {
		t.Fatalf("long line misread")
	}
}

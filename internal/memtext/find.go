package memtext

import "strings"

// Type is the kind of a finding.
type Type string

// The finding types.
const (
	TypeDecision   Type = "decision"
	TypeConstraint Type = "constraint"
	TypeTodo       Type = "todo"
	TypeFixme      Type = "fixme"
	TypeBlocker    Type = "blocker"
	TypeQuestion   Type = "question"
)

// maxSentence caps Finding.Sentence and Finding.Rationale, in bytes.
const maxSentence = 400

// Finding is one sentence of a message that states a decision, a
// constraint, a TODO or FIXME, a blocker, or an open question.
type Finding struct {
	Type Type
	// Sentence is the sentence, cleaned: markdown emphasis, bullets and
	// heading marks removed, whitespace collapsed, capped at 400 bytes at
	// a rune boundary. Start and End are its byte offsets in the text
	// Find was given; Sentence is derived from text[Start:End] alone.
	Sentence   string
	Start, End int
	// Key is Normalize of the core statement (the sentence without its
	// rationale), equal for the same statement restated.
	Key string

	// Subject is what a decision is about, when the sentence names it:
	// "cache" in "for the cache, use Redis" and in "use Redis for the
	// cache". Chooses and Replaces are the options it takes and drops,
	// lowercased ("use X instead of Y": Chooses [x], Replaces [y]).
	Subject string
	// SubjectFrom says why Subject is what it is: "\"atlas\" is a
	// migration tool", "the sentence says \"migrations\"", "named in the
	// sentence".
	SubjectFrom string
	Chooses     []string
	Replaces    []string
	// Settings is set when Chooses are the settings of a task request
	// ("learning rate 3e-5", "batch size 16"), each a decision of its
	// own whose subject is SettingName of it.
	Settings bool
	// Head is, for a list of settings, the words of the sentence before
	// the list ("Kick off the fine-tune" of "Kick off the fine-tune:
	// learning rate 3e-5, batch size 16"): what each setting is of.
	Head string
	// Context is the sentence before a decision's, cleaned and capped at
	// 300 bytes: what it is about when the sentence itself does not say
	// ("We need an argument parser." before "Use clap."); "" for the
	// first sentence of a text.
	Context string
	// Rationale is the "because …", "since …", "so that …", "to avoid …"
	// clause of the sentence, or else the next sentence when it opens with
	// "This is because", "The reason", "That way", "Because", "Since" and
	// the like; "" when there is none.
	Rationale string

	// Modal is a constraint's requirement word: must, must not, never,
	// always, do not, should, should not, required, make sure, only,
	// under no circumstances. Negative is set for the prohibitions.
	Modal    string
	Negative bool
	// Until is, for a rule for the time being, the condition it holds
	// until ("finance signs off").
	Until string
}

// FindOptions says who wrote a text and what to report.
type FindOptions struct {
	// Role is who wrote the text: user, assistant or system. Progress
	// phrases ("still need to", "remaining work:") count as TODOs only
	// from the assistant.
	Role string
	// Questions reports the questions the text asks its reader (Type
	// question). The caller sets it for the final assistant message of
	// a task, where a question left unanswered is an open thread.
	Questions bool
	// Plan says the text is a plan the user approved: each of its
	// bulleted or numbered items that is neither narration nor a
	// verification step is a decision, as under a "Decisions" heading.
	Plan bool
	// Delegated says the text is the agent's prompt to a subagent, read
	// as a user's: its requests are the subagent's task, not choices the
	// user made.
	Delegated bool
}

// Find returns the findings in text, a user, assistant or system message,
// in order of position; one sentence yields at most one finding of each
// type. See the package comment for what is not prose.
func Find(text string, opts FindOptions) []Finding {
	if text == "" {
		return nil
	}
	low := lowerASCII(text)
	ss := sentences(nil, text)
	var out []Finding
	var toks []tok
	prevDecision := -1 // the last sentence that stated a decision
	for i, sn := range ss {
		toks = tokenize(toks[:0], text, low, sn.s, sn.e)
		if len(toks) == 0 {
			continue
		}
		a := analysis{text: text, toks: toks, sn: sn, role: opts.Role, first: i == 0, delegated: opts.Delegated}
		a.question = endsWithQuestion(text[sn.s:sn.e])
		a.cond = a.conditional()
		if sn.heading {
			// A heading states nothing by itself, except a marker heading
			// such as "## TODO: wire the parser".
			out = a.markers(out)
			continue
		}
		if d, ok := a.decision(); ok || (sn.decSection || opts.Plan && sn.item && a.planStatement()) && !a.question && !a.cond && a.notNarration() {
			f := a.decisionFinding(d, ss, i)
			if prevDecision == i-1 && i > 0 {
				// The sentence before is a decision of its own, told on
				// its own (and replaced on its own): quoting it here
				// would show it as in force after it is replaced.
				f.Context = ""
			}
			out = append(out, f)
			prevDecision = i
		}
		cond, forbids, holds := a.hold()
		if modal, neg, ok := a.constraint(); ok {
			out = append(out, a.finding(TypeConstraint, func(f *Finding) { f.Modal, f.Negative = modal, neg }))
		} else if holds {
			// "Keep the old jobs running until finance signs off, don't
			// delete them yet": a rule for the time being.
			out = append(out, a.finding(TypeConstraint, func(f *Finding) {
				f.Modal, f.Negative, f.Until = "until", forbids, cond
				if forbids {
					f.Modal = "do not"
				}
			}))
		} else if opts.Role == "user" && !a.question && !a.cond && i+1 < len(ss) && ruleMarker(low[ss[i+1].s:ss[i+1].e]) {
			// "Config changes go through staging for 24h first. That's
			// the rule."
			out = append(out, a.finding(TypeConstraint, func(f *Finding) { f.Modal = "must" }))
		}
		if holds {
			out = append(out, a.finding(TypeWait, func(f *Finding) {
				f.Sentence, f.Key = cond, Normalize(cond)
			}))
		}
		out = a.markers(out)
		if a.blocker() {
			out = append(out, a.finding(TypeBlocker, nil))
		}
		if opts.Questions && opts.Role != "user" && (a.question && a.openQuestion(ss, i) || !a.question && a.askStatement()) {
			out = append(out, a.finding(TypeQuestion, func(f *Finding) {
				if i > 0 && !ss[i-1].heading {
					f.Context = capBytes(clean(text[ss[i-1].s:ss[i-1].e]), 300)
				}
			}))
		} else if opts.Role == "user" && a.question && (i+1 < len(ss) && parked(low[ss[i+1].s:ss[i+1].e]) || parkedLabel(low[sn.s:sn.e])) {
			// The user leaves a question open on purpose: "Do we split
			// the state per team or per environment? Leave it open."
			out = append(out, a.finding(TypeQuestion, nil))
		}
	}
	return out
}

// analysis holds one sentence's tokens and what was learned about it.
type analysis struct {
	text     string
	toks     []tok
	sn       sent
	role     string
	question bool
	cond     bool
	// first: the sentence is the text's first.
	first bool
	// delegated: FindOptions.Delegated.
	delegated bool
}

// at returns the i-th token's text, or "" out of range.
func (a *analysis) at(i int) string {
	if i < 0 || i >= len(a.toks) {
		return ""
	}
	return a.toks[i].w
}

func (a *analysis) isWord(i int) bool {
	return i >= 0 && i < len(a.toks) && a.toks[i].kind == tWord
}

// raw returns the text of tokens [i, j).
func (a *analysis) raw(i, j int) string {
	if i >= j || i < 0 || j > len(a.toks) {
		return ""
	}
	return a.text[a.toks[i].s:a.toks[j-1].e]
}

func (a *analysis) finding(t Type, set func(*Finding)) Finding {
	sentence := clean(a.text[a.sn.s:a.sn.e])
	f := Finding{Type: t, Sentence: capBytes(sentence, maxSentence), Start: a.sn.s, End: a.sn.e, Key: Normalize(sentence)}
	if set != nil {
		set(&f)
	}
	return f
}

// askStatement reports a request for the reader's answer that is no
// question by its punctuation: "Let me know whether you want …", "Please
// confirm which one to keep."
func (a *analysis) askStatement() bool {
	i := 0
	for i < len(a.toks) && (clauseStartFillers[a.at(i)] || a.at(i) == ",") {
		i++
	}
	// "Not sure whether you want X kept; let me know."
	if n := len(a.toks); n >= 3 && a.at(n-3) == "me" && a.at(n-2) == "know" || n >= 2 && a.at(n-2) == "me" && a.at(n-1) == "know" {
		for _, t := range a.toks {
			if t.w == "whether" || t.w == "if" || t.w == "which" {
				return true
			}
		}
	}
	switch {
	case a.at(i) == "let" && a.at(i+1) == "me" && a.at(i+2) == "know":
		i += 3
	case a.at(i) == "confirm":
		i++
	case a.at(i) == "tell" && a.at(i+1) == "me":
		i += 2
	default:
		return false
	}
	switch a.at(i) {
	case "if", "whether", "which", "what", "how", "where", "who":
		return true
	}
	return false
}

// endsWithQuestion reports whether s ends in '?', past closing quotes,
// brackets and emphasis.
func endsWithQuestion(s string) bool {
	s = strings.TrimRight(s, " \t\r\n\"')*_]")
	return strings.HasSuffix(s, "?")
}

// clauseBreak reports whether token i ends a clause for the purpose of
// finding an imperative: ':', ';', '(', a dash.
func (a *analysis) clauseBreak(i int) bool {
	t := a.toks[i]
	return t.kind == tPunct && (t.w == ":" || t.w == ";" || t.w == "(" || t.w == "—")
}

// clauseStartFillers may precede an imperative at the start of a clause.
var clauseStartFillers = map[string]bool{
	"please": true, "also": true, "and": true, "but": true, "so": true, "ok": true, "okay": true, "just": true,
	"again": true, "then": true, "now": true, "remember": true, "important": true, "note": true, "nb": true,
	"reminder": true, "rule": true, "rules": true, "alright": true, "yes": true, "yeah": true, "thanks": true,
	"finally": true, "generally": true, "in": true, "general": true, "from": true, "on": true, "going": true,
	"forward": true, "hey": true, "oh": true, "additionally": true, "instead": true, "otherwise": true,
	"actually": true, "hmm": true, "wait": true, "no": true, "nah": true, "right": true, "correction": true,
	"second": true, "thought": true,
	"!": true, ",": true, "\"": true,
}

// clauseStart reports whether token i starts its clause, past fillers.
func (a *analysis) clauseStart(i int) bool {
	for j := i - 1; j >= 0; j-- {
		if a.clauseBreak(j) {
			return true
		}
		if !clauseStartFillers[a.toks[j].w] {
			return false
		}
	}
	return true
}

// clauseFrom returns the index of the first token of the comma-delimited
// clause holding token i.
func (a *analysis) clauseFrom(i int) int {
	for j := i - 1; j >= 0; j-- {
		if t := a.toks[j]; t.kind == tPunct && (t.w == "," || t.w == ";" || t.w == ":" || t.w == "(" || t.w == "—") {
			return j + 1
		}
	}
	return 0
}

// conditional reports whether the sentence opens with a condition ("if",
// "when", "unless", "in case", …): what it says is not stated as fact.
func (a *analysis) conditional() bool {
	i := 0
	for i < len(a.toks) && (a.toks[i].w == "so" || a.toks[i].w == "and" || a.toks[i].w == "but" || a.toks[i].w == "ok" || a.toks[i].w == "okay" || a.toks[i].w == "also" || a.toks[i].w == "then" || a.toks[i].w == ",") {
		i++
	}
	switch a.at(i) {
	case "if", "when", "whenever", "unless", "whether", "suppose", "supposing", "assuming", "once", "until", "provided":
		return true
	case "in":
		return a.at(i+1) == "case"
	case "what":
		return a.at(i+1) == "if"
	}
	return false
}

// hedges, found in a decision's clause before its trigger, make it a
// possibility, a negation or a subordinate clause rather than a decision.
var hedges = map[string]bool{
	"could": true, "might": true, "may": true, "would": true, "maybe": true, "perhaps": true, "possibly": true,
	"probably": true, "consider": true, "considering": true, "considered": true, "wonder": true, "wondering": true,
	"option": true, "alternative": true, "alternatively": true, "approach": true, "idea": true, "suggest": true,
	"propose": true, "if": true, "whether": true, "unless": true, "not": true, "never": true, "nobody": true,
	"nothing": true, "neither": true, "haven't": true, "hasn't": true, "hadn't": true, "didn't": true,
	"don't": true, "doesn't": true, "won't": true, "wouldn't": true, "isn't": true, "aren't": true, "wasn't": true,
	"can't": true, "cannot": true, "shouldn't": true, "when": true, "once": true, "after": true, "before": true,
	"until": true, "why": true, "how": true, "what": true, "who": true, "nice": true, "sure": true, "wish": true,
	"hope": true, "want": true, "prefer": true, "thinking": true, "think": true, "plan": true,
}

// hedged reports whether a hedge precedes token i within its clause.
func (a *analysis) hedged(i int) bool {
	for j := a.clauseFrom(i); j < i; j++ {
		w := a.toks[j].w
		if !hedges[w] || w == "plan" {
			// "the plan is to" is the trigger itself, not a hedge.
			continue
		}
		switch w {
		case "when", "once", "after", "before", "until":
			// Temporal words make a subordinate clause only when a
			// subject follows: "after we decided", not "after some
			// back and forth we decided".
			if !personal(a.at(j+1)) && a.at(j+1) != "you" {
				continue
			}
		}
		return true
	}
	return false
}

// narrationVerbs are what an agent does while working (reading, checking,
// running), not what it decides.
var narrationVerbs = map[string]bool{
	"read": true, "look": true, "check": true, "run": true, "inspect": true, "explore": true, "search": true,
	"open": true, "examine": true, "investigate": true, "start": true, "begin": true, "first": true,
	"review": true, "see": true, "find": true, "grep": true, "verify": true, "confirm": true, "understand": true,
	"figure": true, "dig": true, "trace": true, "debug": true, "reproduce": true, "try": true, "scan": true,
	"view": true, "list": true, "analyze": true, "analyse": true, "study": true, "take": true, "glance": true,
	"rerun": true, "re-run": true, "reread": true, "re-read": true, "print": true, "dump": true, "test": true,
	"peek": true, "browse": true, "skim": true, "have": true, "quickly": true, "double-check": true,
	"locate": true, "determine": true, "identify": true, "learn": true, "get": true, "ask": true, "wait": true,
	"quick": true, "closer": true, "searching": true, "reading": true, "looking": true, "checking": true,
	"running": true, "inspecting": true, "exploring": true, "grepping": true, "ahead": true,
}

// personal reports whether w names the speaker or the team as a subject.
func personal(w string) bool {
	switch w {
	case "i", "we", "i've", "we've", "i'd", "we'd", "i'm", "we're", "team", "i'll", "we'll", "us", "everyone", "everybody":
		return true
	}
	return false
}

// subjectBefore reports whether a personal subject ("we", "I", "the
// team") sits within three tokens before i, with nothing but auxiliaries
// and adverbs in between.
func (a *analysis) subjectBefore(i int) bool {
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		w := a.toks[j].w
		if personal(w) {
			return true
		}
		switch w {
		case "have", "had", "finally", "just", "already", "now", "also", "then", "all", "both", "eventually",
			"ultimately", "together", "the", "did", "instead", "therefore", "so", "and", "will", "shall", "officially",
			"are", "am", "were", "actually":
			continue
		}
		return false
	}
	return false
}

// placeWords after "switch to" mean moving around, not a decision.
var placeWords = map[string]bool{
	"branch": true, "directory": true, "dir": true, "folder": true, "worktree": true, "tab": true, "window": true,
	"terminal": true, "shell": true, "mode": true, "file": true, "repo": true, "checkout": true, "main": true,
}

// ruleMarker reports whether a sentence only says that the one before it
// is a rule: "That's the rule.", "This is non-negotiable."
func ruleMarker(low string) bool {
	low = strings.TrimRight(strings.TrimSpace(low), ".!")
	switch low {
	case "that's the rule", "that is the rule", "this is the rule", "that's a hard rule", "this is a hard rule",
		"that's non-negotiable", "this is non-negotiable", "non-negotiable", "no exceptions", "that's a rule",
		"this is a rule", "those are the rules", "that's final":
		return true
	}
	return false
}

// parkMarkers say that the question before them stays open for now.
var parkMarkers = []string{
	"leave it open", "leave that open", "leave this open", "keep it open", "no need to answer", "don't answer",
	"park it", "park that", "park this", "not decide today", "let's not decide", "decide later", "get back to me",
	"think about it", "for later", "open for now", "no rush on", "don't implement it yet", "don't decide yet",
	"we'll decide", "not now",
}

// parked reports whether a sentence after a user's question leaves it
// open: "Leave it open.", "Think about it, no need to answer now."
func parked(low string) bool {
	for _, m := range parkMarkers {
		if strings.Contains(low, m) {
			return true
		}
	}
	return false
}

// parkedLabel reports whether a user's question is labelled as one for
// later: "One more thing for later: …", "Open question: …".
func parkedLabel(low string) bool {
	c := strings.IndexByte(low, ':')
	if c < 0 || c > 40 {
		return false
	}
	label := low[:c]
	return strings.Contains(label, "for later") || strings.Contains(label, "open question") || strings.Contains(label, "open point")
}

// planStatement reports whether an item of an approved plan states how
// something is or works ("Redirects from old URLs via the _redirects
// file", "Prorate: a plan cancelled mid-period is billed for the days it
// was active"): no step of the work ("Update the entry point"), no status
// line ("Filename: x.py ✓"), no note.
func (a *analysis) planStatement() bool {
	raw := a.text[a.sn.s:a.sn.e]
	if strings.ContainsAny(raw, "✓✔✅✗❌") {
		return false
	}
	i := 0
	for j := 1; j < len(a.toks) && j <= 3; j++ {
		if a.at(j) == ":" {
			switch a.at(0) {
			case "note", "nb", "todo", "warning", "caveat", "question", "optional", "maybe":
				return false
			}
			i = j + 1
			break
		}
	}
	if !a.isWord(i) || imperativeVerb(a.at(i)) && a.at(i) != "a" && a.at(i) != "the" && a.at(i) != "every" && a.at(i) != "each" && a.at(i) != "all" {
		return false
	}
	n := 0
	stated := false
	for j := i; j < len(a.toks); j++ {
		if !a.isWord(j) {
			continue
		}
		n++
		switch a.at(j) {
		case "is", "are", "stays", "stay", "start", "starts", "go", "goes", "gets", "becomes", "via", "through", "lives", "live", "runs", "run":
			stated = true
		}
	}
	return stated && n >= 4
}

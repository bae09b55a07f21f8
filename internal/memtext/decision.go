package memtext

import (
	"slices"
	"strings"
)

// Decision kinds: how the options sit around the trigger.
const (
	dkAction   = iota // "decided to <verb> …": no named option unless the verb is "use"
	dkOption          // the option follows: "use X", "go with X", "opted for X"
	dkSwitch          // "switch (from Y) to X"
	dkReplace         // "replace Y with X"
	dkDrop            // "drop Y", "no longer use Y", "decided against Y"
	dkColon           // "Decision: …"
	dkMake            // "make the cache key the tenant id, not the user id"
	dkSet             // "set the batch size to 64"
	dkSettings        // "train with lr 1e-4 and bf16"
)

// decHit is where a decision was found: the trigger token, the first token
// after it that the options are read from, and the kind.
type decHit struct {
	trig, obj, kind int
}

// decisionVerbs may follow "let's", "we'll", "I'll" as a decision.
var decisionVerbs = map[string]int{
	"use": dkOption, "adopt": dkOption, "pick": dkOption, "choose": dkOption, "standardize": dkOption,
	"switch": dkSwitch, "move": dkSwitch, "migrate": dkSwitch, "replace": dkReplace, "drop": dkDrop,
	"stick": dkOption, "opt": dkOption, "settle": dkOption, "ditch": dkDrop,
}

// decision reports whether the sentence states a decision.
func (a *analysis) decision() (decHit, bool) {
	if a.question || a.cond {
		return decHit{}, false
	}
	for i := 0; i < len(a.toks); i++ {
		t := a.toks[i]
		if t.kind != tWord {
			continue
		}
		if h, ok := a.decisionAt(i); ok {
			if a.hedged(h.trig) {
				return decHit{}, false
			}
			return h, true
		}
	}
	if _, _, ok := a.settings(); ok {
		return decHit{trig: 0, obj: 0, kind: dkSettings}, true
	}
	if h, ok := a.answerLabel(); ok {
		return h, true
	}
	if h, ok := a.approvalLabel(); ok {
		return h, true
	}
	if h, ok := a.goesTo(); ok {
		return h, true
	}
	if h, ok := a.insteadOpener(); ok {
		return h, true
	}
	if h, ok := a.permission(); ok {
		return h, true
	}
	if h, ok := a.toolStatement(); ok {
		return h, true
	}
	if h, ok := a.insteadOfProhibited(); ok {
		return h, true
	}
	if h, ok := a.weDo(); ok {
		return h, true
	}
	if h, ok := a.configDefault(); ok {
		return h, true
	}
	if h, ok := a.userHow(); ok {
		return h, true
	}
	return decHit{}, false
}

// permission reads the user's go-ahead for a change held back until
// now: "You can retire the old job now", "go ahead and delete the
// flag".
func (a *analysis) permission() (decHit, bool) {
	if a.role != "user" || a.delegated {
		return decHit{}, false
	}
	for i := 0; i+2 < len(a.toks); i++ {
		v := -1
		switch {
		case a.at(i) == "you" && a.at(i+1) == "can" && a.clauseStart(i) && a.hasWordAfter(i, "now"):
			v = i + 2
		case a.at(i) == "go" && a.at(i+1) == "ahead" && a.at(i+2) == "and" && a.clauseStart(i):
			v = i + 3
		default:
			continue
		}
		if w := a.at(v); !a.isWord(v) || !imperativeVerb(w) || narrationVerbs[w] || hedges[w] || w == "also" || w == "ask" || w == "stop" {
			return decHit{}, false
		}
		return decHit{trig: i, obj: -1, kind: dkAction}, true
	}
	return decHit{}, false
}

// howPreps introduce how a requested change is done.
var howPreps = map[string]bool{"with": true, "using": true, "via": true, "as": true, "from": true, "every": true}

// howKinds name a way of doing something: "with the append strategy",
// "with a nightly job".
var howKinds = map[string]bool{
	"strategy": true, "approach": true, "pattern": true, "mode": true, "algorithm": true, "job": true,
	"queue": true, "table": true, "library": true, "backend": true, "cron": true, "index": true, "lock": true,
	"cache": true, "worker": true, "hash": true, "key": true, "keys": true, "header": true, "format": true,
}

// userHow reads a request of the user's that says how the change is
// done, not only what to do: an imperative (after an optional "Label:")
// with "with", "using", "via", "as", "from" or "every" followed by a
// concrete choice: a value or date, a name written as code or with a
// capital, or a kind of way ("the append strategy", "a nightly job").
// "Backfill from 2026-01-01", "Purge them with a nightly job", "Issue
// tokens as JWTs signed with RS256".
func (a *analysis) userHow() (decHit, bool) {
	if a.role != "user" || a.delegated {
		return decHit{}, false
	}
	starts := []int{0}
	for j := 1; j < len(a.toks) && j <= 6; j++ {
		if a.at(j) == ":" {
			starts = append(starts, j+1)
			break
		}
	}
	for j := 1; j < len(a.toks); j++ {
		if a.at(j) == ";" {
			starts = append(starts, j+1)
		}
	}
	for _, v := range starts {
		for a.at(v) == "please" || a.at(v) == "also" || a.at(v) == "then" || a.at(v) == "and" || a.at(v) == "now" || a.at(v) == "just" {
			v++
		}
		w := a.at(v)
		if !a.isWord(v) || !imperativeVerb(w) || narrationVerbs[w] || hedges[w] || personal(w) || w == "you" || w == "your" || w == "they" || w == "he" || w == "she" {
			continue
		}
		switch w {
		case "let", "tell", "show", "explain", "help", "thanks", "thank", "remember", "note", "say", "give", "send", "reply", "answer", "write", "commit", "push", "ping", "fyi", "btw", "ps":
			continue
		}
		if raw := a.text[a.toks[v].s:a.toks[v].e]; len(raw) > 1 && strings.ToUpper(raw) == raw {
			// "CI runs …", "FYI the job …": a name or an aside, no verb.
			continue
		}
		found := -1
		for j := v + 1; j < len(a.toks); j++ {
			if a.at(j) == ";" || a.at(j) == "." || a.at(j) == "how" || a.at(j) == "what" || a.at(j) == "why" {
				// "add how to install with uv" describes content.
				break
			}
			if !howPreps[a.at(j)] || a.at(j) == "as" && (a.at(j+1) == "well" || a.at(j+1) == "soon" || a.at(j+1) == "much" || a.at(j+1) == "needed" || a.at(j+1) == "before" || a.at(j+1) == "is" || a.at(j+1) == "usual") {
				continue
			}
			if a.concreteAfter(j) {
				// The option is what the preposition introduces: "RS256",
				// "the append strategy", "a nightly job"; one whose job
				// is known comes first ("as JWTs signed with RS256").
				if found < 0 {
					found = j + 1
				}
				k := j + 1
				for a.at(k) == "the" || a.at(k) == "a" || a.at(k) == "an" {
					k++
				}
				if _, ok := optionRoles[a.at(k)]; ok {
					found = j + 1
					break
				}
			}
		}
		if found >= 0 {
			return decHit{trig: v, obj: found, kind: dkOption}, true
		}
	}
	return decHit{}, false
}

// concreteAfter reports whether a concrete choice follows token j within
// three words: a value or date, code, a word with a capital or written
// as an identifier, or a kind of way.
func (a *analysis) concreteAfter(j int) bool {
	from := a.at(j) == "from"
	for k := j + 1; k < len(a.toks) && k <= j+4; k++ {
		t := a.toks[k]
		if t.kind == tCode {
			return !from
		}
		if t.kind != tWord {
			return false
		}
		raw := a.text[t.s:t.e]
		switch {
		case hasDigit(t.w):
			return true
		case from:
		case numberWords[t.w] || howKinds[t.w] || optionRoles[t.w] != "":
			return true
		case strings.Contains(t.w, "_") || raw != t.w && raw != strings.ToUpper(raw[:1])+raw[1:] && k > 0:
			// snake_case, or capitals inside the word (RS256, JWTs, gRPC).
			return true
		case raw[0] >= 'A' && raw[0] <= 'Z' && len(raw) > 1:
			return true
		}
	}
	return false
}

// insteadOpener reads "Instead of X, I injected Y." and "Rather than X,
// I'll Y.": an opening alternative, then a subject and a verb that is
// no narration.
func (a *analysis) insteadOpener() (decHit, bool) {
	i := 0
	for i < len(a.toks) && clauseStartFillers[a.at(i)] && a.at(i) != "instead" {
		i++
	}
	if !(a.at(i) == "instead" && a.at(i+1) == "of" || a.at(i) == "rather" && a.at(i+1) == "than") {
		return decHit{}, false
	}
	c := -1
	for j := i + 2; j < len(a.toks); j++ {
		if a.at(j) == "," {
			c = j
			break
		}
	}
	if c < 0 || !personal(a.at(c+1)) {
		return decHit{}, false
	}
	v := c + 2
	if a.at(v) == "will" || a.at(v) == "have" || a.at(v) == "decided" || a.at(v) == "just" {
		v++
	}
	if a.at(v) == "to" {
		v++
	}
	if !a.isWord(v) || narrationVerbs[a.at(v)] || narrationVerbs[strings.TrimSuffix(a.at(v), "ed")] || a.at(v) == "not" || hedges[a.at(v)] || a.at(v) == "should" || a.at(v) == "could" {
		return decHit{}, false
	}
	return decHit{trig: c + 1, obj: -1, kind: dkAction}, true
}

// decisionAt tries every decision pattern whose trigger is token i.
func (a *analysis) decisionAt(i int) (decHit, bool) {
	w := a.toks[i].w
	if a.role == "user" {
		if h, ok := a.valueChange(i); ok {
			return h, true
		}
		switch {
		case w == "rip" && a.at(i+1) == "out" && a.clauseStart(i) && a.isWord(i+2):
			// "Rip out our retry helper."
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		case w == "get" && a.at(i+1) == "rid" && a.at(i+2) == "of" && a.isWord(i+3) && (a.clauseStart(i) || a.at(i-1) == "but" || a.at(i-1) == "and" || a.letsBefore(i)):
			// "keep rollup but get rid of the babel plugin".
			return decHit{trig: i, obj: i + 3, kind: dkDrop}, true
		case w == "like" && a.at(i-1) == "i'd" && a.at(i+1) == "to" && (a.at(i+2) == "keep" || a.at(i+2) == "use" || a.at(i+2) == "switch" || a.at(i+2) == "move") && a.isWord(i+3):
			// "I'd like to keep rollup".
			return decHit{trig: i, obj: i + 3, kind: dkOption}, true
		}
	}
	switch w {
	case "decided", "decide":
		if !(a.subjectBefore(i) || (i == 0 && a.at(1) == ":") || a.at(i-1) == "finally" && i == 1) {
			return decHit{}, false
		}
		if w == "decide" && a.at(i-1) != "to" && !a.subjectBefore(i) {
			return decHit{}, false
		}
		if w == "decide" {
			// "we decide" in the present is rare as a statement; "we
			// need to decide" is not one.
			return decHit{}, false
		}
		switch a.at(i + 1) {
		case "to":
			return a.action(i, i+2)
		case "on":
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		case "against":
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		case "that", ":", "—":
			return decHit{trig: i, obj: -1, kind: dkAction}, true
		case "whether", "if", "which", "what", "how", "when", "where", "who", "yet", "", ".", "?", ",", "so":
			return decHit{}, false
		default:
			// "We decided the cache lives in …": a clause without "that".
			if a.isWord(i + 1) {
				return decHit{trig: i, obj: -1, kind: dkAction}, true
			}
		}
	case "change":
		// "Change of plan: store sessions in Postgres."
		if a.at(i+1) == "of" && a.at(i+2) == "plan" && (a.at(i+3) == ":" || a.at(i+3) == "," || a.at(i+3) == "—") && i == 0 {
			return decHit{trig: i, obj: i + 4, kind: dkColon}, true
		}
		if a.role == "assistant" || !a.clauseStart(i) {
			return decHit{}, false
		}
		return a.setTo(i)
	case "decision", "decisions":
		j := i + 1
		if a.at(j) == ":" || a.at(j) == "—" {
			if !a.labelStart(i) {
				return decHit{}, false
			}
			return decHit{trig: i, obj: j + 1, kind: dkColon}, true
		}
		if (a.at(j) == "is" || a.at(j) == "was") && a.at(j+1) == "to" {
			return a.action(i, j+2)
		}
	case "go", "going", "went", "revert", "reverting", "roll", "rolling":
		if w == "going" && a.at(i+1) == "back" && !a.subjectBefore(i) && !a.letsBefore(i) {
			// "Going back to the original question, …"
			return decHit{}, false
		}
		if a.at(i+1) == "back" && a.at(i+2) == "to" || (w == "revert" || w == "reverting") && a.at(i+1) == "to" {
			obj := i + 3
			if a.at(i+1) == "to" {
				obj = i + 2
			}
			if !(a.clauseStart(i) || a.subjectBefore(i) || a.letsBefore(i) || (a.at(i-1) == "and" || a.at(i-1) == ",") && a.role == "user" && imperativeVerb(a.at(0))) || a.narrationObject(obj) || a.placeObject(obj) || notSubject[a.at(obj)] {
				return decHit{}, false
			}
			return decHit{trig: i, obj: obj, kind: dkOption}, true
		}
		if w == "revert" && a.role == "user" && a.clauseStart(i) && a.at(i+1) != "to" && a.at(i+1) != "it" && a.at(i+1) != "that" && a.at(i+1) != "this" && a.isWord(i+1) {
			// "Revert the ORM change."
			return decHit{trig: i, obj: i + 1, kind: dkDrop}, true
		}
		if w == "going" && a.at(i+1) == "to" && a.subjectBefore(i) {
			// "I'm going to use X", "we're going to switch to Y".
			if _, ok := decisionVerbs[a.at(i+2)]; ok {
				return a.afterAux(i, i+2)
			}
			return decHit{}, false
		}
		if a.at(i+1) == "for" && w != "revert" && w != "reverting" && w != "roll" && w != "rolling" && (a.letsBefore(i) || a.clauseStart(i) && a.role == "user") && !a.narrationObject(i+2) && a.isWord(i+2) {
			// "Let's go for zstd."
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		}
		if a.at(i+1) != "with" || w == "revert" || w == "reverting" || w == "roll" || w == "rolling" {
			if w == "going" && a.at(i+1) == "forward" {
				return a.forward(i)
			}
			return decHit{}, false
		}
		if !(a.clauseStart(i) || a.subjectBefore(i) || a.letsBefore(i)) {
			return decHit{}, false
		}
		if a.narrationObject(i + 2) {
			return decHit{}, false
		}
		return decHit{trig: i, obj: i + 2, kind: dkOption}, true
	case "chose", "chosen", "opted", "settled", "agreed", "picked":
		if !a.subjectBefore(i) {
			return decHit{}, false
		}
		next := a.at(i + 1)
		switch {
		case next == "to":
			return a.action(i, i+2)
		case w == "opted" && next == "for", w == "settled" && next == "on", w == "agreed" && next == "on":
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		case w == "opted" && next == "against":
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		case w == "chose" || w == "chosen" || w == "picked":
			if a.narrationObject(i + 1) {
				return decHit{}, false
			}
			return decHit{trig: i, obj: i + 1, kind: dkOption}, true
		}
	case "plan":
		if a.at(i+1) == "is" && a.at(i+2) == "to" {
			return a.action(i, i+3)
		}
	case "let's", "lets":
		return a.afterAux(i, i+1)
	case "let":
		if a.at(i+1) == "us" {
			return a.afterAux(i, i+2)
		}
	case "we'll", "i'll":
		return a.afterAux(i, i+1)
	case "will", "shall":
		if p := a.at(i - 1); p == "we" || p == "i" {
			return a.afterAux(i, i+1)
		}
	case "use", "switch", "replace", "drop", "move", "migrate", "adopt", "standardize", "ditch", "scrap", "nix":
		if w == "use" && a.role != "assistant" && a.notUseBefore(i) >= 0 {
			// "don't use X for Y, use Z": Z replaces X.
			return decHit{trig: i, obj: i + 1, kind: dkOption}, true
		}
		if w == "use" && a.role == "user" && a.at(i-1) == "," && !prohibitionOpen[a.at(0)] && a.isWord(i+1) && !a.useForNarration(i) && !notSubject[a.at(i+1)] && !a.toolObject(i+1) && !a.reuse(i+1) && !a.hasWordAfter(i, "if") {
			// "shipping_country is gone for good, use billing_country
			// as the fallback."
			return a.imperative(i)
		}
		if !a.clauseStart(i) && !a.forClauseBefore(i) {
			// "we're switching", "I'm switching", "we switched"
			if w == "switch" || w == "move" || w == "migrate" {
				return decHit{}, false
			}
			return decHit{}, false
		}
		return a.imperative(i)
	case "switching", "switched", "moving", "moved", "migrating", "migrated":
		if w == "moving" && a.at(i+1) == "forward" {
			return a.forward(i)
		}
		if !a.subjectBefore(i) && !(i == 0 && a.role == "user") {
			return decHit{}, false
		}
		if a.at(i+1) == "off" {
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		}
		if a.at(i+1) == "away" && a.at(i+2) == "from" {
			return decHit{trig: i, obj: i + 3, kind: dkDrop}, true
		}
		return a.switchTo(i, i+1)
	case "stick", "stay", "sticking", "staying":
		if n := a.at(i + 1); (n == "with" || (w == "stay" || w == "staying") && n == "on") && (a.clauseStart(i) || a.subjectBefore(i) || a.letsBefore(i)) {
			if a.narrationObject(i+2) || a.placeObject(i+2) {
				return decHit{}, false
			}
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		}
	case "keep":
		if a.at(i+1) == "using" && (a.clauseStart(i) || a.subjectBefore(i) || a.letsBefore(i)) {
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		}
		// "Keep the JSON config." (a choice) but not "Keep the binary
		// under 20 MB." (a rule: keepState) nor "keep going".
		if a.role == "user" && a.clauseStart(i) && a.isWord(i+1) && !narrationVerbs[a.at(i+1)] && a.at(i+1) != "going" && a.at(i+1) != "it" && a.at(i+1) != "in" && !a.keepState(i) && !a.keepHow(i) {
			return decHit{trig: i, obj: i + 1, kind: dkOption}, true
		}
	case "stop":
		if a.at(i+1) == "using" && (a.clauseStart(i) && a.role != "assistant" || a.subjectBefore(i) || a.letsBefore(i)) {
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		}
	case "won't", "wont":
		if p := a.at(i - 1); (p == "we" || p == "i" && a.role == "user") && (a.at(i+1) == "use" || a.at(i+1) == "be") {
			j := i + 2
			if a.at(i+1) == "be" {
				if a.at(j) != "using" {
					return decHit{}, false
				}
				j++
			}
			return decHit{trig: i, obj: j, kind: dkDrop}, true
		}
	case "make":
		if a.role == "assistant" || !a.clauseStart(i) || a.at(i+1) == "sure" {
			return decHit{}, false
		}
		return a.makeSetting(i)
	case "set", "bump", "raise", "lower":
		if a.role == "assistant" || !a.clauseStart(i) {
			return decHit{}, false
		}
		return a.setTo(i)
	case "rather":
		// "I'd rather we use SQLite", "we'd rather go with X".
		if p := a.at(i - 1); (p == "i'd" || p == "we'd") && a.role != "assistant" {
			v := i + 1
			if personal(a.at(v)) || a.at(v) == "you" {
				v++
			}
			if a.at(v) == "go" && a.at(v+1) == "with" || a.at(v) == "stick" && a.at(v+1) == "with" {
				return decHit{trig: i, obj: v + 2, kind: dkOption}, true
			}
			if k, ok := decisionVerbs[a.at(v)]; ok {
				if k == dkSwitch {
					return a.switchTo(i, v+1)
				}
				return decHit{trig: i, obj: v + 1, kind: k}, true
			}
		}
		if a.at(i+1) == "than" && a.role == "user" {
			return a.userAlternative(i)
		}
	case "prefer":
		// "Prefer composition over inheritance."
		if a.role != "assistant" && a.clauseStart(i) && (a.hasWordAfter(i, "over") || a.hasAlternative(i) || a.hasWordAfter(i, "to")) {
			return decHit{trig: i, obj: i + 1, kind: dkOption}, true
		}
	case "ship":
		if a.at(i+1) == "with" && (a.letsBefore(i) || a.subjectBefore(i) || a.clauseStart(i) && a.role == "user") {
			return decHit{trig: i, obj: i + 2, kind: dkOption}, true
		}
	case "forget":
		// "forget YAML" from the user.
		if a.role == "user" && a.clauseStart(i) && a.at(i+1) != "to" && a.at(i+1) != "it" && a.at(i+1) != "about" && a.isWord(i+1) {
			return decHit{trig: i, obj: i + 1, kind: dkDrop}, true
		}
	case "be", "is", "are":
		// "The cache key should be the tenant id, not the user id."
		return a.copulaSetting(i)
	case "instead":
		// "Let's do it in Rust instead." "Do the rename in a migration
		// instead." From the user, at the end of a clause.
		if a.role == "user" && a.at(i+1) == "of" {
			return a.userAlternative(i)
		}
		if a.at(i+1) != "of" && (a.at(i+1) == "" || a.toks[i+1].kind == tPunct) && a.role == "assistant" {
			// "I'll give each tenant its own pool instead."
			for j := a.clauseFrom(i); j < i; j++ {
				if w := a.at(j); (w == "i'll" || w == "we'll" || w == "let's") && !narrationVerbs[a.at(j+1)] {
					return decHit{trig: i, obj: -1, kind: dkAction}, true
				}
			}
			return decHit{}, false
		}
		if a.role != "user" || a.at(i+1) == "of" || !(a.at(i+1) == "" || a.toks[i+1].kind == tPunct) {
			return decHit{}, false
		}
		first := a.clauseFrom(i)
		for first < i && clauseStartFillers[a.at(first)] {
			first++
		}
		if first >= i || !imperativeVerb(a.at(first)) || personal(a.at(first)) || narrationVerbs[a.at(first)] && a.at(first) != "try" {
			return decHit{}, false
		}
		switch a.at(first) {
		case "it", "this", "that", "they", "he", "she", "you", "there", "the", "a", "an", "is", "was", "are":
			return decHit{}, false
		}
		return decHit{trig: i, obj: -1, kind: dkAction}, true
	case "fix", "approach", "solution", "option", "way", "choice":
		if w == "option" && a.role == "user" && i == 0 && len(a.toks) <= 5 && a.isWord(1) && (hasDigit(a.at(1)) || len(a.at(1)) == 1) {
			// "Option 2 please." "Option B."
			return decHit{trig: i, obj: i, kind: dkOption}, true
		}
		// "The simplest fix is to …", "the best approach is to use …"
		switch a.at(i - 1) {
		case "best", "simplest", "right", "cleanest", "safest", "correct", "proper", "better", "chosen", "preferred", "real":
		default:
			return decHit{}, false
		}
		if a.at(i+1) == "is" && a.at(i+2) == "to" {
			return a.action(i, i+3)
		}
	case "ended":
		// "I ended up using errgroup."
		if a.at(i+1) == "up" && a.subjectBefore(i) {
			switch a.at(i + 2) {
			case "using", "choosing", "picking", "keeping":
				return decHit{trig: i, obj: i + 3, kind: dkOption}, true
			case "going", "sticking":
				if a.at(i+3) == "with" {
					return decHit{trig: i, obj: i + 4, kind: dkOption}, true
				}
			case "switching", "moving", "migrating":
				return a.switchTo(i, i+3)
			}
		}
	case "replaced", "swapped":
		// "I replaced the retry loop with the SDK's retries."
		if a.subjectBefore(i) && a.hasWordAfter(i, "with") && !a.narrationObject(i+1) {
			return decHit{trig: i, obj: i + 1, kind: dkReplace}, true
		}
	case "no":
		if a.at(i+1) == "more" && a.role == "user" && a.clauseStart(i) && a.isWord(i+2) {
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		}
		if a.at(i+1) == "longer" && (a.at(i+2) == "use" || a.at(i+2) == "using") && a.subjectBefore(i) {
			return decHit{trig: i, obj: i + 3, kind: dkDrop}, true
		}
	case "from":
		if (a.at(i+1) == "now" || a.at(i+1) == "here") && a.at(i+2) == "on" {
			return a.forward(i)
		}

	}
	return decHit{}, false
}

// notUseBefore returns where X starts when "don't use X," or "do not
// use X," or "not X," ends just before the "use" at token i, or -1.
func (a *analysis) notUseBefore(i int) int {
	if a.at(i-1) != "," {
		return -1
	}
	from := a.clauseFrom(i - 1)
	for j := from; j < i-1; j++ {
		switch a.at(j) {
		case "don't", "dont", "never":
			if a.at(j+1) == "use" {
				return j + 2
			}
		case "not":
			if a.at(j+1) == "use" {
				return j + 2
			}
		}
	}
	return -1
}

// labelStart reports whether a "Decision:" label at token i opens its
// clause, past adjectives such as "final" and "our".
func (a *analysis) labelStart(i int) bool {
	for j := i - 1; j >= 0; j-- {
		if a.clauseBreak(j) {
			return true
		}
		switch a.toks[j].w {
		case "final", "our", "my", "the", "architecture", "design", "key", "one", "another", "team", "technical",
			"ok", "okay", "so", "and", ",", "tech":
			continue
		}
		return false
	}
	return true
}

// letsBefore reports whether "let's", "we'll", "I'll" or "we will"
// directly precedes token i.
func (a *analysis) letsBefore(i int) bool {
	switch a.at(i - 1) {
	case "let's", "lets", "we'll", "i'll", "will":
		return true
	case "us":
		return a.at(i-2) == "let"
	}
	return false
}

// action reads "<trigger> to <verb> …": a narration verb is no decision,
// "use X" and "switch to X" name options, anything else is an action.
func (a *analysis) action(trig, v int) (decHit, bool) {
	if !a.isWord(v) {
		return decHit{}, false
	}
	w := a.at(v)
	if narrationVerbs[w] {
		return decHit{}, false
	}
	if w == "go" && a.at(v+1) == "with" {
		return decHit{trig: trig, obj: v + 2, kind: dkOption}, true
	}
	if k, ok := decisionVerbs[w]; ok {
		if k == dkSwitch {
			if h, ok := a.switchTo(trig, v+1); ok {
				return h, true
			}
			return decHit{trig: trig, obj: -1, kind: dkAction}, true
		}
		if a.useForNarration(v) {
			return decHit{}, false
		}
		return decHit{trig: trig, obj: v + 1, kind: k}, true
	}
	return decHit{trig: trig, obj: -1, kind: dkAction}, true
}

// afterAux reads what follows "let's", "we'll", "I'll", "we will": only
// the decision verbs count ("let's run the tests" is narration).
func (a *analysis) afterAux(trig, v int) (decHit, bool) {
	if a.at(v) == "not" {
		// "let's not bother with X": X is dropped.
		if a.at(v+1) == "bother" && a.at(v+2) == "with" && a.at(trig) != "i'll" {
			return decHit{trig: trig, obj: v + 3, kind: dkDrop}, true
		}
		// "let's not use X": X is dropped.
		if (a.at(v+1) == "use" || a.at(v+1) == "go") && a.at(trig) != "i'll" {
			obj := v + 2
			if a.at(v+1) == "go" {
				if a.at(v+2) != "with" {
					return decHit{}, false
				}
				obj++
			}
			return decHit{trig: trig, obj: obj, kind: dkDrop}, true
		}
		return decHit{}, false
	}
	// "we'll go with", "let's go with" are read at "go".
	w := a.at(v)
	if a.role != "assistant" {
		switch w {
		case "keep":
			// "Let's keep the file name", not "keep going".
			if a.isWord(v+1) && !narrationVerbs[a.at(v+1)] && a.at(v+1) != "going" && a.at(v+1) != "it" {
				return decHit{trig: trig, obj: -1, kind: dkAction}, true
			}
		case "set", "change", "update", "bump", "raise", "lower", "make":
			if h, ok := a.setTo(v); ok {
				return h, true
			}
		case "do", "run", "handle", "build", "write", "implement", "manage", "deploy", "test", "parse", "serve":
			if h, ok := a.toolChoice(trig, v); ok {
				return h, true
			}
		}
	}
	if w == "stick" && a.at(v+1) == "with" {
		return decHit{trig: trig, obj: v + 2, kind: dkOption}, true
	}
	pv := v
	for a.at(pv) == "also" || a.at(pv) == "just" || a.at(pv) == "then" {
		pv++
	}
	if a.at(pv) == "pin" || a.at(pv) == "cap" {
		// "I'll also pin the VPC module to 5.1.2".
		if h, ok := a.valueChange(pv); ok {
			return h, true
		}
	}
	if _, known := decisionVerbs[w]; !known && a.insteadAfter(v) && a.isWord(v) && !narrationVerbs[w] && !hedges[w] && imperativeVerb(w) {
		// "I'll put the runner in its own binary instead of running it
		// at boot": a choice between two ways, whatever the verb.
		return decHit{trig: trig, obj: -1, kind: dkAction}, true
	}
	k, ok := decisionVerbs[w]
	if !ok && a.role == "assistant" {
		return a.assistantChoice(trig, pv)
	}
	if !ok || w == "stick" {
		return decHit{}, false
	}
	if k == dkSwitch {
		return a.switchTo(trig, v+1)
	}
	if a.useForNarration(v) {
		return decHit{}, false
	}
	if k == dkReplace && !a.hasWordAfter(v, "with") {
		return decHit{}, false
	}
	if a.role == "assistant" && a.at(trig) == "i'll" && k == dkOption && !a.hasAlternative(v) {
		// "I'll use the Grep tool" is how the agent works; "I'll use a
		// pool instead of …" is a decision.
		if a.toolObject(v + 1) {
			return decHit{}, false
		}
	}
	return decHit{trig: trig, obj: v + 1, kind: k}, true
}

// forward reads "going forward (,) we('ll) use X" and "from now on …".
func (a *analysis) forward(i int) (decHit, bool) {
	for j := i + 2; j < len(a.toks) && j < i+6; j++ {
		switch a.at(j) {
		case "use", "using":
			return decHit{trig: i, obj: j + 1, kind: dkOption}, true
		case "switch":
			return a.switchTo(i, j+1)
		}
	}
	// "…; CircleCI from now on." "we use pnpm from now on."
	end := i + 3
	if a.at(i) == "going" || a.at(i) == "moving" {
		end = i + 2
	}
	if i == 0 && a.at(end) == "," && a.role == "user" {
		// "Moving forward, deploys go through Argo."
		for j := end + 1; j < len(a.toks); j++ {
			switch a.at(j) {
			case "through", "via", "with", "use", "uses", "using":
				return decHit{trig: i, obj: -1, kind: dkAction}, true
			}
		}
	}
	if end >= len(a.toks) || a.toks[end].kind == tPunct {
		c := a.clauseFrom(i)
		for c < i && (personal(a.at(c)) || clauseStartFillers[a.at(c)] || a.at(c) == "use" || a.at(c) == "using" || a.at(c) == "it's" || a.at(c) == "is" || a.at(c) == "will" || a.at(c) == "go" || a.at(c) == "with") {
			c++
		}
		if c < i && i-c <= 5 && !a.question {
			return decHit{trig: i, obj: c, kind: dkOption}, true
		}
	}
	return decHit{}, false
}

// setTo reads "set X to V" (or change, update, bump, raise, lower) at
// token i, where V is a value: a number, a code span, or one or two
// words ending the clause.
func (a *analysis) setTo(i int) (decHit, bool) {
	if a.at(i+1) == "up" || !a.isWord(i+1) || notSubject[a.at(i+1)] || a.at(i+1) == "to" {
		return decHit{}, false
	}
	for j := i + 2; j < len(a.toks) && j < i+8; j++ {
		if a.toks[j].kind == tPunct {
			break
		}
		if a.at(j) != "to" || j+1 >= len(a.toks) {
			continue
		}
		v := a.toks[j+1]
		end := j + 2
		for end < len(a.toks) && a.toks[end].kind != tPunct && !optionStop[a.at(end)] {
			end++
		}
		if v.kind == tCode || hasDigit(v.w) || end-(j+1) <= 2 && !narrationVerbs[v.w] && !decisionVerbLike(v.w) {
			return decHit{trig: i, obj: i + 1, kind: dkSet}, true
		}
		break
	}
	return decHit{}, false
}

// toolChoice reads "do X with Y" (or using Y) after a verb at v, where Y
// is a known tool or library: "let's do the migration with alembic".
func (a *analysis) toolChoice(trig, v int) (decHit, bool) {
	for j := v + 1; j < len(a.toks) && j < v+8; j++ {
		if a.toks[j].kind == tPunct {
			return decHit{}, false
		}
		if w := a.at(j); w == "with" || w == "using" || w == "via" || w == "through" {
			if r, _ := optionRole(strings.ToLower(a.at(j + 1))); r != "" {
				return decHit{trig: trig, obj: j + 1, kind: dkOption}, true
			}
			return decHit{}, false
		}
	}
	return decHit{}, false
}

// userAlternative reads a user's imperative that weighs options at
// token i ("instead of Y", "rather than Y"): "Rate limit per API key
// rather than per IP." The sentence must open with a verb.
func (a *analysis) userAlternative(i int) (decHit, bool) {
	first := 0
	for first < i && (clauseStartFillers[a.at(first)] || a.at(first) == ",") {
		first++
	}
	w := a.at(first)
	if first >= i || !a.isWord(first) || personal(w) || narrationVerbs[w] || !imperativeVerb(w) {
		return decHit{}, false
	}
	switch w {
	case "it", "this", "that", "they", "he", "she", "you", "there", "the", "a", "an", "is", "was", "are", "we", "i",
		"my", "our", "your", "its", "their", "what", "which", "how", "why", "when", "where", "who", "not", "no":
		return decHit{}, false
	}
	return decHit{trig: i, obj: -1, kind: dkAction}, true
}

// copulaSetting reads "X should be Y, not Z" (or "X is Y, not Z", "X
// will be Y rather than Z") from the user at the copula i: a setting
// whose value is named against another.
func (a *analysis) copulaSetting(i int) (decHit, bool) {
	if a.role != "user" || !a.hasAlternative(i) {
		return decHit{}, false
	}
	s := a.clauseFrom(i)
	e := i
	if p := a.at(i - 1); a.at(i) == "be" {
		if p != "should" && p != "must" && p != "will" && p != "shall" {
			return decHit{}, false
		}
		e = i - 1
	}
	for s < e && clauseStartFillers[a.at(s)] {
		s++
	}
	for k := 0; k < s; k++ {
		// The setting opens the sentence, past fillers.
		if !clauseStartFillers[a.at(k)] && a.at(k) != "," {
			return decHit{}, false
		}
	}
	if e-s < 1 || e-s > 5 {
		return decHit{}, false
	}
	for j := s; j < e; j++ {
		if a.toks[j].kind != tWord && a.toks[j].kind != tCode {
			return decHit{}, false
		}
	}
	switch a.at(s) {
	case "it", "this", "that", "they", "there", "he", "she", "we", "i", "you", "what", "which", "everything", "nothing":
		return decHit{}, false
	}
	if !settingNouns[a.at(e-1)] {
		return decHit{}, false
	}
	return decHit{trig: s, obj: i + 1, kind: dkSet}, true
}

// settingNouns name what a setting sets: "the cache key should be …",
// "the default is …".
var settingNouns = map[string]bool{
	"key": true, "default": true, "defaults": true, "timeout": true, "limit": true, "size": true, "port": true,
	"format": true, "name": true, "id": true, "value": true, "version": true, "threshold": true, "strategy": true,
	"backend": true, "engine": true, "driver": true, "mode": true, "level": true, "policy": true, "owner": true,
	"target": true, "encoding": true, "unit": true, "path": true, "location": true, "store": true, "schedule": true,
	"interval": true, "region": true, "provider": true, "prefix": true, "suffix": true, "separator": true,
	"rate": true, "ttl": true, "budget": true, "cap": true, "retention": true, "branch": true, "base": true,
	"algorithm": true, "library": true, "tool": true, "runner": true, "framework": true, "language": true,
}

// keepHow reports "keep X <how>" at token i, which says how to work,
// not what to keep: "keep the diff small", "keep the endpoint working
// until …", "keep the migrations in SQL files".
func (a *analysis) keepHow(i int) bool {
	for j := i + 2; j < len(a.toks); j++ {
		if a.toks[j].kind == tPunct {
			return false
		}
		switch a.toks[j].w {
		case "small", "smaller", "short", "shorter", "simple", "clean", "working", "minimal", "fast", "tidy", "readable",
			"focused", "consistent", "alive", "separate", "up", "in", "at", "on", "around", "until", "as", "while", "open",
			"running", "together", "apart", "out", "away", "low", "high", "lean", "quiet", "local", "same":
			return true
		}
	}
	return false
}

// keepState reports "keep X <state>" at token i: a rule ("keep the
// binary under 20 MB", "keep commits small", "keep the API stable").
func (a *analysis) keepState(i int) bool {
	switch a.at(i + 1) {
	case "it", "going", "calm", "on", "trying", "looking", "working", "them", "that", "this":
		return false
	}
	for j := i + 1; j < len(a.toks) && j < i+8; j++ {
		if a.toks[j].kind == tPunct {
			return false
		}
		switch a.toks[j].w {
		case "under", "below", "above", "within", "stable", "compatible", "backwards", "backward", "private", "sorted",
			"intact", "unchanged", "green", "passing", "deterministic", "idempotent", "offline":
			return j > i+1
		}
	}
	return false
}

// makeSetting reads "make X Y, not Z" at token i ("make the cache key the
// tenant id, not the user id"): a setting, only when an alternative is
// named.
func (a *analysis) makeSetting(i int) (decHit, bool) {
	if !a.hasAlternative(i) {
		return decHit{}, false
	}
	return decHit{trig: i, obj: i + 1, kind: dkMake}, true
}

// taskVerbs open a task request whose settings ("train with lr 1e-4 and
// bf16") are decisions; the value is the subject's stem.
var taskVerbs = map[string]string{
	"train": "training", "retrain": "training", "fine-tune": "fine-tuning", "finetune": "fine-tuning",
	"pretrain": "pretraining", "run": "run", "rerun": "run", "evaluate": "evaluation", "eval": "evaluation",
	"benchmark": "benchmark", "build": "build", "deploy": "deployment", "launch": "launch", "serve": "serving",
	"compile": "build", "fit": "training", "sample": "sampling", "generate": "generation", "quantize": "quantization",
	"export": "export", "profile": "profiling", "test": "test", "start": "run",
}

// settings reads the settings a user's task request states: a task verb
// opening the sentence, then "with" or "using" and a list of settings
// with at least one value ("lr 1e-4", "bf16", "batch size 32",
// "epochs=3"). It returns the settings and the subject.
func (a *analysis) settings() ([]string, string, bool) {
	if a.role != "user" || a.question || a.cond {
		return nil, "", false
	}
	first := 0
	for first < len(a.toks) && clauseStartFillers[a.at(first)] {
		first++
	}
	stem, ok := taskVerbs[a.at(first)]
	if a.at(first) == "kick" && a.at(first+1) == "off" {
		// "Kick off the fine-tune: learning rate 3e-5, batch size 16."
		stem, ok = "run", true
	}
	with := -1
	if ok {
		for j := first + 1; j < len(a.toks) && j < first+12; j++ {
			if a.at(j) == "with" || a.at(j) == "using" || a.at(j) == ":" {
				with = j
				break
			}
			if a.toks[j].kind == tPunct && a.at(j) != "-" {
				return nil, "", false
			}
		}
	}
	if v := a.at(first); with < 0 && !ok && a.isWord(first) && imperativeVerb(v) && !narrationVerbs[v] && !softImperatives[v] && a.role == "user" {
		for j := first + 1; j < len(a.toks) && j < first+6; j++ {
			if a.toks[j].kind == tPunct {
				break
			}
			if (a.at(j) == "with" || a.at(j) == "at") && hasDigit(a.at(j+1)+a.at(j+2)) && (hasDigit(a.at(j+1)) || a.isWord(j+1) && hasDigit(a.at(j+2))) {
				// "Queue mailers with concurrency 10."
				stem, with = strings.ToLower(a.raw(first+1, j)), j
				stem = strings.Join(articleless(words(stem)), " ")
				break
			}
		}
	}
	if with < 0 && !ok {
		if label, c := a.settingsLabel(first); c > 0 {
			// "Rate limiting: 20 messages per 10 seconds, keyed per user id."
			stem, with = label, c
		}
	}
	if with < 0 && !ok {
		if subj, v, ok := a.namedValue(first); ok {
			// "Server tick rate 30 Hz for now."
			return []string{v}, subj, true
		}
	}
	if with < 0 {
		return nil, "", false
	}
	var out []string
	var cur []string
	valued := false
	flush := func() {
		for len(cur) > 0 && (cur[0] == "a" || cur[0] == "an" || cur[0] == "the") {
			cur = cur[1:]
		}
		if len(cur) > 0 && len(cur) <= 5 {
			s := strings.Join(cur, " ")
			if hasDigit(s) {
				valued = true
			}
			out = append(out, s)
		}
		cur = cur[:0]
	}
	for j := with + 1; j < len(a.toks); j++ {
		t := a.toks[j]
		if t.w == "and" || t.w == "," || t.w == "plus" {
			flush()
			continue
		}
		if (t.w == "on" || t.w == "off") && len(cur) > 0 && (j+1 == len(a.toks) || a.at(j+1) == "," || a.at(j+1) == "and" || a.at(j+1) == ".") {
			// "bf16 on, 3 epochs": a switch's value ends its item.
			cur = append(cur, t.w)
			continue
		}
		if t.kind == tPunct && t.w != "=" && t.w != "-" || t.w == "for" || t.w == "on" || t.w == "to" || t.w == "so" || t.w == "because" {
			break
		}
		cur = append(cur, strings.ToLower(a.text[t.s:t.e]))
	}
	flush()
	if !valued || len(out) == 0 {
		return nil, "", false
	}
	if !taskSettings[stem] {
		return out, stem, true
	}
	return out, stem + " settings", true
}

// taskSettings are the stems of taskVerbs: a task request's settings are
// "<stem> settings"; a labelled list is about its label.
var taskSettings = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range taskVerbs {
		m[v] = true
	}
	return m
}()

// settingsLabelStops open a label that introduces no settings: a report
// or a log line ("Error: exit code 1", "Update: 3 tests fail").
var settingsLabelStops = map[string]bool{
	"error": true, "errors": true, "update": true, "step": true, "note": true, "output": true, "result": true,
	"results": true, "status": true, "exit": true, "warning": true, "traceback": true, "fail": true, "failed": true,
	"test": true, "tests": true, "log": true, "logs": true, "time": true, "build": true, "line": true, "todo": true,
	"question": true, "answer": true, "ps": true, "edit": true, "summary": true, "fixme": true, "context": true,
	"example": true, "e.g": true, "i.e": true, "plan": true, "total": true, "found": true, "got": true, "expected": true,
	"actual": true, "before": true, "after": true, "now": true, "today": true, "yesterday": true, "version": true,
}

// settingsLabel reads a label of one to three words and its colon at the
// start of a sentence whose list starts with a value: "Rate limiting:
// 20 messages per 10 seconds". It returns the label and the colon's index.
func (a *analysis) settingsLabel(first int) (string, int) {
	j := first
	for j < len(a.toks) && j < first+3 && a.isWord(j) && !hasDigit(a.at(j)) && !settingsLabelStops[a.at(j)] && !personal(a.at(j)) && a.at(j) != "you" && a.at(j) != "i" && a.at(j) != "it" {
		j++
	}
	if j == first || a.at(j) != ":" || j+1 >= len(a.toks) || !hasDigit(a.at(j+1)) {
		return "", -1
	}
	return strings.ToLower(a.raw(first, j)), j
}

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

// imperative reads an imperative decision verb at the start of a clause:
// "Use X instead of Y", "Use X for Y", "Switch the logger from Y to X",
// "Replace Y with X", "Drop Y".
func (a *analysis) imperative(i int) (decHit, bool) {
	w := a.at(i)
	switch w {
	case "use", "adopt", "standardize":
		if a.useForNarration(i) || a.toolObject(i+1) && !a.hasAlternative(i) || notSubject[a.at(i+1)] || a.reuse(i+1) && !a.hasAlternative(i) {
			return decHit{}, false
		}
		if a.hasWordAfter(i, "if") || a.hasWordAfter(i, "unless") || a.hasWordAfter(i, "whenever") {
			// "Use WebFetch if you need to confirm": how to work, not a
			// choice.
			return decHit{}, false
		}
		if a.role == "assistant" && !a.hasAlternative(i) {
			// An assistant's imperative is an instruction to the user
			// ("Use --force to overwrite"), not a decision, unless it
			// weighs options.
			return decHit{}, false
		}
		return decHit{trig: i, obj: i + 1, kind: dkOption}, true
	case "switch", "move", "migrate":
		if a.role == "assistant" && !a.hasAlternative(i) && a.at(i+1) != "from" {
			// An instruction to the reader ("Move to Settings > …");
			// "switch from X to Y" names what it drops: a choice.
			return decHit{}, false
		}
		if a.at(i+1) == "off" && a.role != "assistant" {
			return decHit{trig: i, obj: i + 2, kind: dkDrop}, true
		}
		return a.switchTo(i, i+1)
	case "replace":
		if !a.hasWordAfter(i, "with") {
			return decHit{}, false
		}
		return decHit{trig: i, obj: i + 1, kind: dkReplace}, true
	case "drop", "ditch", "scrap", "nix":
		if a.role == "assistant" || !a.isWord(i+1) && a.at(i+1) != "`" {
			return decHit{}, false
		}
		for j := i + 1; j < len(a.toks); j++ {
			if a.toks[j].kind == tPunct {
				break
			}
			switch a.at(j) {
			case "before", "after", "from", "when", "where", "if", "that", "which", "with", "whose", "older", "without":
				// "Drop duplicate invoices before loading": a step of
				// processing data, not an option given up.
				return decHit{}, false
			}
		}
		return decHit{trig: i, obj: i + 1, kind: dkDrop}, true
	}
	return decHit{}, false
}

// switchTo reads "(from Y) to X" after a switch verb at trig; v is the
// token after the verb.
func (a *analysis) switchTo(trig, v int) (decHit, bool) {
	to := -1
	for j := v; j < len(a.toks) && j < v+12; j++ {
		if a.toks[j].kind == tPunct && a.toks[j].w != "(" && a.toks[j].w != ")" {
			break
		}
		if a.at(j) == "to" || a.at(j) == "over" && j > v {
			to = j
			break
		}
	}
	if to < 0 {
		// "move the config parsing into its own package": a change of
		// structure, no option named.
		if w := a.at(trig); (w == "move" && a.role != "assistant" || w == "let's" || w == "lets" || w == "we'll" || w == "i'll") && a.hasWordAfter(v, "into") && !a.narrationObject(v) {
			return decHit{trig: trig, obj: -1, kind: dkAction}, true
		}
		return decHit{}, false
	}
	if a.narrationObject(to+1) || a.placeObject(to+1) {
		return decHit{}, false
	}
	return decHit{trig: trig, obj: v, kind: dkSwitch}, true
}

// forClauseBefore reports whether token i follows an opening "For the X,"
// or "Instead of X," clause.
func (a *analysis) forClauseBefore(i int) bool {
	if i < 2 || a.at(i-1) != "," {
		return false
	}
	from := a.clauseFrom(i - 1)
	first := a.at(from)
	if from == 0 || a.clauseBreak(from-1) {
		return first == "for" || first == "instead" || first == "rather" || (first == "ok" || first == "so") && from+1 < i-1
	}
	return false
}

func (a *analysis) hasWordAfter(i int, w string) bool {
	for j := i + 1; j < len(a.toks); j++ {
		if a.toks[j].w == w {
			return true
		}
	}
	return false
}

// hasAlternative reports whether the sentence weighs options after token
// i: "instead of", "rather than", "over", ", not Y".
func (a *analysis) hasAlternative(i int) bool {
	for j := i + 1; j < len(a.toks); j++ {
		switch a.toks[j].w {
		case "instead", "rather":
			return true
		case "not":
			if a.at(j-1) == "," {
				return true
			}
		case "for":
			if a.role != "assistant" {
				return true
			}
		}
	}
	return false
}

// reuse reports an object that is what already exists ("the existing
// types", "the same helper", "the provided fixture"): reusing it is how
// to do the task, no choice between options.
func (a *analysis) reuse(i int) bool {
	if w := a.at(i); w == "the" || w == "our" || w == "your" || w == "its" {
		i++
	}
	switch a.at(i) {
	case "existing", "current", "same", "provided", "following", "given", "above", "usual", "standard":
		return true
	}
	return false
}

// useForNarration reports "use X to <narration verb>": the agent using a
// tool to look at something.
func (a *analysis) useForNarration(v int) bool {
	if r, _ := optionRole(strings.ToLower(a.at(v + 1))); r != "" && a.role != "assistant" {
		return false
	}
	for j := v + 1; j < len(a.toks) && j < v+8; j++ {
		if a.toks[j].kind == tPunct {
			return false
		}
		if a.toks[j].w == "to" {
			return narrationVerbs[a.at(j+1)] || a.role == "assistant" || a.clauseStart(v) && !a.hasAlternative(v)
		}
		switch a.toks[j].w {
		case "instead", "rather", "for":
			return false
		}
	}
	return false
}

// toolObject reports whether the object at i is one of the agent's tools
// ("the Grep tool", "grep", "the Read tool").
func (a *analysis) toolObject(i int) bool {
	for j := i; j < len(a.toks) && j < i+4; j++ {
		switch a.toks[j].w {
		case "tool", "tools", "grep", "rg", "find", "sed", "awk", "cat", "ls", "command", "terminal", "shell", "bash":
			return true
		}
	}
	return false
}

// narrationObject reports whether the object at i is a work step ("a
// quick search", "a look", "the first file").
func (a *analysis) narrationObject(i int) bool {
	for j := i; j < len(a.toks) && j < i+3; j++ {
		w := a.toks[j].w
		switch w {
		case "a", "an", "the", "another", "one":
			continue
		}
		return narrationVerbs[w] || w == "flow"
	}
	return false
}

// placeObject reports whether the object at i is a place: a branch, a
// directory, a tab.
func (a *analysis) placeObject(i int) bool {
	for j := i; j < len(a.toks) && j < i+5; j++ {
		if a.toks[j].kind == tPunct {
			return false
		}
		if placeWords[a.toks[j].w] {
			return true
		}
	}
	return false
}

// notNarration reports whether a sentence in a "Decision" section states
// something rather than narrates work.
func (a *analysis) notNarration() bool {
	for _, t := range a.toks {
		if t.kind == tWord {
			return !narrationVerbs[t.w] && t.w != "let" && t.w != "i'm"
		}
	}
	return false
}

// optionStop ends an option phrase.
var optionStop = map[string]bool{
	"instead": true, "rather": true, "for": true, "because": true, "since": true, "so": true, "to": true,
	"as": true, "when": true, "if": true, "unless": true, "until": true, "with": true, "from": true, "not": true,
	"than": true, "and": true, "but": true, "which": true, "that": true, "now": true, "going": true, "over": true,
	"in": true, "on": true, "last": true, "by": true, "here": true, "there": true, "then": true, "too": true,
	"also": true, "everywhere": true, "directly": true, "only": true, "across": true, "between": true, "please": true, "at": true,
}

// phrase returns the option phrase starting at token i, lowercased and
// without leading articles, with the index after it; "" when it is empty
// or longer than six words (then it is a clause, not an option).
func (a *analysis) phrase(i int) (string, int) {
	for i < len(a.toks) && (a.toks[i].w == "the" || a.toks[i].w == "a" || a.toks[i].w == "an" || a.toks[i].w == "our" || a.toks[i].w == "my" || a.toks[i].w == "its" || a.toks[i].w == "this" || a.toks[i].w == "that" || a.toks[i].w == "using") {
		i++
	}
	j := i
	for j < len(a.toks) {
		t := a.toks[j]
		if t.kind == tPunct || optionStop[t.w] && j > i {
			break
		}
		j++
	}
	if j == i || j-i > 6 {
		return "", j
	}
	return strings.Join(words(a.raw(i, j)), " "), j
}

// decisionFinding builds the Finding for a decision hit in sentence si.
func (a *analysis) decisionFinding(h decHit, ss []sent, si int) Finding {
	f := a.finding(TypeDecision, nil)
	rs := a.rationale()
	core := a.text[a.sn.s:a.sn.e]
	if rs >= 0 {
		f.Rationale = capBytes(strings.TrimRight(clean(a.text[a.toks[rs].s:a.sn.e]), ".!;: "), maxSentence)
		core = a.text[a.sn.s:a.toks[rs].s]
	} else if si+1 < len(ss) && !ss[si+1].heading && reasonOpener(a.text[ss[si+1].s:ss[si+1].e]) {
		f.Rationale = capBytes(clean(a.text[ss[si+1].s:ss[si+1].e]), maxSentence)
	}
	f.Key = Normalize(core)
	// "For the cache, use Redis." "Instead of polling, use fsnotify."
	switch {
	case a.at(0) == "for":
		if s, j := a.phrase(1); s != "" && a.at(j) == "," {
			f.Subject = s
		}
	case a.at(0) == "instead" && a.at(1) == "of", a.at(0) == "rather" && a.at(1) == "than":
		if s, j := a.phrase(2); s != "" && a.at(j) == "," {
			f.Replaces = append(f.Replaces, s)
		}
	}
	if !(h.trig == 0 && h.obj == 0 && h.kind == 0) {
		a.options(&f, h)
	}
	if a.role == "user" && !f.Settings {
		if items, head := a.changeList(); len(items) >= 2 {
			// "Retry the run but halve the batch and use gradient
			// accumulation 2, and drop the LR to 2e-5": each change a
			// decision of its own.
			f.Chooses, f.Replaces, f.Settings, f.Head = items, nil, true, head
			f.Subject, f.SubjectFrom = "changes", "the changes of a task request"
		}
	}
	prev := ""
	if si > 0 && !ss[si-1].heading {
		prev = a.text[ss[si-1].s:ss[si-1].e]
	}
	if si > 0 {
		f.Context = capBytes(clean(a.text[ss[si-1].s:ss[si-1].e]), 300)
		// "Right, append was wrong for this. Use merge keyed on …": what
		// the sentence before rejects is what this one replaces.
		if r := rejected(a.text, ss[si-1]); r != "" && !slices.Contains(f.Replaces, r) {
			f.Replaces = append(f.Replaces, r)
		}
	}
	a.subjectOf(&f, prev)
	return f
}

// rejected returns the option a sentence calls a mistake, lowercased:
// "append" in "Right, append was wrong for this.", "the retry wrapper"
// in "The retry wrapper was a bad idea."; "" when it rejects nothing.
func rejected(text string, sn sent) string {
	low := lowerASCII(text)
	toks := tokenize(nil, text, low, sn.s, sn.e)
	for i := 1; i+1 < len(toks); i++ {
		if toks[i].w != "was" && toks[i].w != "is" {
			continue
		}
		n1, n2 := toks[i+1].w, ""
		if i+2 < len(toks) {
			n2 = toks[i+2].w
		}
		if !(n1 == "wrong" || n1 == "a" && (n2 == "mistake" || n2 == "bad") || n1 == "the" && n2 == "wrong") {
			continue
		}
		// The option: the words back to the start of the clause, at
		// most three, without articles.
		j := i
		for j > 0 && i-j < 3 && toks[j-1].kind == tWord && !clauseStartFillers[toks[j-1].w] && toks[j-1].w != "right" && toks[j-1].w != "ok" && toks[j-1].w != "okay" {
			j--
		}
		ws := articleless(wordsOf(toks[j:i]))
		if len(ws) == 0 || len(ws) == 1 && (ws[0] == "it" || ws[0] == "that" || ws[0] == "this" || ws[0] == "i" || personal(ws[0])) {
			return ""
		}
		return strings.Join(ws, " ")
	}
	return ""
}

// wordsOf returns the words of toks.
func wordsOf(toks []tok) []string {
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		out = append(out, t.w)
	}
	return out
}

// options fills Subject, Chooses and Replaces from the decision hit.
func (a *analysis) options(f *Finding, h decHit) {
	add := func(dst *[]string, s string) {
		if s != "" {
			*dst = append(*dst, s)
		}
	}
	// follow reads what trails an option: "for Y", "instead of Y",
	// "rather than Y", ", not Y", "over Y".
	follow := func(j int) {
		for j < len(a.toks) {
			switch w := a.toks[j].w; {
			case w == "for" && f.Subject == "":
				s, k := a.phrase(j + 1)
				if !notSubject[s] {
					f.Subject = s
				}
				j = k
			case w == "instead" && a.at(j+1) == "of":
				s, k := a.phrase(j + 2)
				add(&f.Replaces, s)
				j = k
			case w == "rather" && a.at(j+1) == "than":
				s, k := a.phrase(j + 2)
				add(&f.Replaces, s)
				j = k
			case w == "over" && (h.kind == dkOption):
				s, k := a.phrase(j + 1)
				add(&f.Replaces, s)
				j = k
			case (w == "not" || w == "no") && a.at(j-1) == ",":
				s, k := a.phrase(j + 1)
				add(&f.Replaces, s)
				j = k
			case w == "because" || w == "since" || w == "so":
				return
			default:
				j++
			}
		}
	}
	switch h.kind {
	case dkOption:
		s, j := a.phrase(h.obj)
		add(&f.Chooses, s)
		if x := a.notUseBefore(h.trig); x >= 0 && a.at(h.trig) == "use" {
			r, _ := a.phrase(x)
			add(&f.Replaces, r)
		}
		follow(j)
	case dkSwitch:
		j := h.obj
		// "switch the logger from Y to X": the words before "from" are
		// the subject.
		for k := j; k < len(a.toks) && k < j+12; k++ {
			if w := a.at(k); w == "from" || w == "to" {
				if k > j && f.Subject == "" && a.at(j) != "over" {
					if s, _ := a.phrase(j); !notSubject[s] {
						f.Subject = s
					}
				}
				j = k
				break
			}
		}
		if a.at(j) == "from" {
			s, k := a.phrase(j + 1)
			add(&f.Replaces, s)
			j = k
		}
		if a.at(j) == "to" {
			s, k := a.phrase(j + 1)
			add(&f.Chooses, s)
			follow(k)
		}
	case dkReplace:
		s, j := a.phrase(h.obj)
		add(&f.Replaces, s)
		for j < len(a.toks) && a.at(j) != "with" {
			j++
		}
		if a.at(j) == "with" {
			s, k := a.phrase(j + 1)
			add(&f.Chooses, s)
			follow(k)
		}
	case dkDrop:
		s, j := a.phrase(h.obj)
		add(&f.Replaces, s)
		follow(j)
	case dkColon:
		j := h.obj
		// "Decision: database: Postgres"
		for k := j; k < len(a.toks) && k < j+5; k++ {
			if a.at(k) == ":" {
				f.Subject, _ = a.phrase(j)
				j = k + 1
				break
			}
			if a.toks[k].kind == tPunct {
				break
			}
		}
		for a.at(j) == "we" || a.at(j) == "we'll" || a.at(j) == "will" || a.at(j) == "let's" || a.at(j) == "i'll" {
			j++
		}
		if a.at(j) == "use" || a.at(j) == "adopt" {
			s, k := a.phrase(j + 1)
			add(&f.Chooses, s)
			follow(k)
		} else if a.at(j) == "go" && a.at(j+1) == "with" || a.at(j) == "going" && a.at(j+1) == "with" {
			s, k := a.phrase(j + 2)
			add(&f.Chooses, s)
			follow(k)
		} else if a.at(j) == "switch" {
			if h2, ok := a.switchTo(h.trig, j+1); ok {
				a.options(f, h2)
			}
		} else if s, k := a.phrase(j); s != "" && (k >= len(a.toks) || a.toks[k].kind == tPunct) && len(strings.Fields(s)) <= 4 && !decisionVerbLike(a.at(j)) {
			add(&f.Chooses, s)
			follow(k)
		}
	case dkAction:
		follow(h.trig + 1)
	case dkMake:
		// "make the cache key the tenant id, not the user id": the second
		// article splits the setting from its value.
		j := h.obj
		end := j
		for end < len(a.toks) && a.toks[end].kind != tPunct && !optionStop[a.at(end)] {
			end++
		}
		split := -1
		for k := j + 2; k < end; k++ {
			if w := a.at(k); w == "the" || w == "a" || w == "an" || w == "our" || w == "its" {
				split = k
				break
			}
		}
		if split < 0 && end-j >= 2 {
			split = end - 1
		}
		if split > j {
			f.Subject = strings.Join(articleless(words(a.raw(j, split))), " ")
			f.SubjectFrom = "the setting the sentence makes"
			if s, _ := a.phrase(split); s != "" {
				add(&f.Chooses, s)
			}
		}
		follow(end)
	case dkSet:
		if w := a.at(h.obj - 1); w == "be" || w == "is" || w == "are" {
			// "X should be Y, not Z": h.trig starts X.
			end := h.obj - 1
			for p := a.at(end - 1); p == "should" || p == "must" || p == "will" || p == "shall"; p = a.at(end - 1) {
				end--
			}
			f.Subject = strings.Join(articleless(words(a.raw(h.trig, end))), " ")
			f.SubjectFrom = "the setting the sentence sets"
			s, k := a.phrase(h.obj)
			add(&f.Chooses, s)
			follow(k)
			break
		}
		j := h.obj
		k := j
		for k < len(a.toks) && a.at(k) != "to" && a.at(k) != "at" {
			k++
		}
		if subj := settingAlias(strings.Join(articleless(words(a.raw(j, k))), " ")); !pronounSubject[subj] {
			f.Subject = subj
			f.SubjectFrom = "the setting the sentence sets"
		}
		if k+1 < len(a.toks) {
			end := k + 1
			for end < len(a.toks) && a.toks[end].kind != tPunct && !optionStop[a.at(end)] {
				end++
			}
			if end == k+1 && end < len(a.toks) {
				end++
			}
			add(&f.Chooses, strings.ToLower(strings.Trim(a.raw(k+1, end), "`")))
			follow(end)
		}
	case dkSettings:
		set, subj, _ := a.settings()
		f.Chooses = append(f.Chooses, set...)
		f.Subject, f.SubjectFrom = subj, "the settings of a task request"
		f.Settings = len(set) > 1
		if f.Settings {
			f.Head = a.settingsHead()
		}
	}
	if len(f.Chooses) == 0 && (h.kind == dkDrop || h.kind == dkSwitch) {
		// "we're moving off Jenkins; CircleCI from now on."
		for i := h.trig + 1; i+2 < len(a.toks); i++ {
			if a.at(i) == "from" && a.at(i+1) == "now" && a.at(i+2) == "on" || a.at(i) == "going" && a.at(i+1) == "forward" {
				if hh, ok := a.forward(i); ok && hh.obj > h.trig {
					s, _ := a.phrase(hh.obj)
					add(&f.Chooses, s)
				}
				break
			}
		}
	}
}

// articleless drops leading articles and possessives.
func articleless(ws []string) []string {
	for len(ws) > 0 {
		switch ws[0] {
		case "the", "a", "an", "our", "my", "its", "this", "that":
			ws = ws[1:]
			continue
		}
		break
	}
	return ws
}

// notSubject are "for …" phrases that say when, not what about.
var notSubject = map[string]bool{
	"now": true, "today": true, "the time being": true, "a while": true, "later": true, "example": true,
	"instance": true, "reference": true, "the moment": true, "good": true, "safety": true, "simplicity": true,
	"consistency": true, "performance": true, "speed": true, "clarity": true, "readability": true, "": true,
	"everything": true, "it": true, "this": true, "that": true, "them": true, "all": true, "back": true, "all of it": true,
}

// decisionVerbLike reports whether w reads as the verb of an action
// rather than the name of an option.
func decisionVerbLike(w string) bool {
	switch w {
	case "keep", "ship", "add", "remove", "split", "leave", "make", "store", "return", "move", "rename", "stay",
		"write", "run", "build", "deploy", "release", "delete", "skip", "drop", "vendor", "cache", "defer", "wait":
		return true
	}
	return false
}

// rationale returns the token index where the sentence's reason clause
// starts ("because", "since" not of time, "so that", "to avoid", "given
// that", "due to"), or -1.
func (a *analysis) rationale() int {
	for i := 1; i < len(a.toks); i++ {
		switch a.toks[i].w {
		case "because":
			return i
		case "since":
			switch a.at(i + 1) {
			case "yesterday", "today", "last", "then", "v1", "v2", "the", "version", "monday", "tuesday", "wednesday", "thursday", "friday", "january", "2020", "2021", "2022", "2023", "2024", "2025", "2026":
				if a.at(i+1) != "the" {
					continue
				}
			}
			return i
		case "so":
			switch a.at(i + 1) {
			case "that", "the", "we", "it", "they", "each", "every", "you", "our", "this", "tests", "users", "callers":
				return i
			}
			if a.at(i-1) == "," && a.isWord(i+1) && a.at(i+1) != "far" {
				return i
			}
		case "to":
			if n := a.at(i + 1); n == "avoid" || n == "prevent" || n == "keep" && a.at(i-1) == "," {
				return i
			}
		case "given":
			if a.at(i+1) == "that" {
				return i
			}
		case "due":
			if a.at(i+1) == "to" {
				return i
			}
		}
	}
	return -1
}

// reasonOpener reports whether a sentence opens by giving the reason for
// the one before it.
func reasonOpener(s string) bool {
	ws := words(s)
	if len(ws) == 0 {
		return false
	}
	two := func(a, b string) bool { return len(ws) > 1 && ws[0] == a && ws[1] == b }
	switch {
	case ws[0] == "because", ws[0] == "since", ws[0] == "reason", ws[0] == "rationale", ws[0] == "why":
		return true
	case two("the", "reason"), two("that", "way"), two("this", "way"), two("that's", "because"), two("it's", "because"),
		two("main", "reason"), two("the", "rationale"), two("this", "avoids"), two("this", "keeps"), two("this", "lets"),
		two("that", "avoids"), two("this", "means"), two("otherwise", "we"):
		return true
	case len(ws) > 2 && (ws[0] == "this" || ws[0] == "that" || ws[0] == "it") && (ws[1] == "is" || ws[1] == "was") && ws[2] == "because":
		return true
	}
	return false
}

// insteadAfter reports an alternative named after token v: "instead of",
// "rather than".
func (a *analysis) insteadAfter(v int) bool {
	for j := v + 1; j+1 < len(a.toks); j++ {
		if a.at(j) == "instead" && a.at(j+1) == "of" || a.at(j) == "rather" && a.at(j+1) == "than" {
			return true
		}
	}
	return false
}

// valueVerbs change a setting to a value: "drop the LR to 2e-5", "cap it
// at 3 days", "throttle captures at 100 requests per second".
var valueVerbs = map[string]bool{
	"drop": true, "cap": true, "throttle": true, "limit": true, "reduce": true, "increase": true,
	"decrease": true, "pin": true, "bump": true, "raise": true, "lower": true, "set": true, "change": true,
	"go": true, "cut": true, "bring": true, "scale": true,
}

// valueChange reads a user's imperative that sets something to a value
// at token i, at a clause's start or after "and", "but" or a comma: "and
// drop the LR to 2e-5", "Go down to 5% for the non-error traces", "cap
// it at 3 days".
func (a *analysis) valueChange(i int) (decHit, bool) {
	w := a.at(i)
	if !valueVerbs[w] || a.question || a.cond {
		return decHit{}, false
	}
	switch a.at(i - 1) {
	case "", ",", "and", "but", "then", "please", "just", "also", ":", ";", "—":
	default:
		if !a.clauseStart(i) {
			return decHit{}, false
		}
	}
	obj := i + 1
	if w == "go" {
		if n := a.at(i + 1); n != "down" && n != "up" {
			return decHit{}, false
		}
		obj = i + 2
	}
	for j := obj; j < len(a.toks) && j < i+8; j++ {
		if t := a.toks[j]; t.kind == tPunct && t.w != "-" && t.w != "%" {
			return decHit{}, false
		}
		if (a.at(j) == "to" || a.at(j) == "at") && j+1 < len(a.toks) && hasDigit(a.at(j+1)) {
			if w == "go" {
				return decHit{trig: i, obj: j, kind: dkSet}, true
			}
			return decHit{trig: i, obj: obj, kind: dkSet}, true
		}
	}
	return decHit{}, false
}

// prohibitionOpen opens a rule, not a choice: "Do not mock the database,
// use the test container."
var prohibitionOpen = map[string]bool{"do": true, "don't": true, "dont": true, "never": true, "always": true}

// pronounSubject names nothing by itself: "cap it at 3 days".
var pronounSubject = map[string]bool{"it": true, "them": true, "this": true, "that": true, "these": true, "those": true, "": true}

// answerLabel reads a user's answer to a question asked before: "About
// the open question from last week: amounts are int64 minor units."
func (a *analysis) answerLabel() (decHit, bool) {
	if a.role != "user" || a.question || a.cond {
		return decHit{}, false
	}
	first := 0
	for first < len(a.toks) && clauseStartFillers[a.at(first)] && a.at(first) != "on" {
		first++
	}
	if w := a.at(first); w != "about" && w != "on" && w != "re" && w != "regarding" {
		return decHit{}, false
	}
	for j := first + 1; j < len(a.toks) && j < first+9; j++ {
		switch a.at(j) {
		case "question", "questions":
			for k := j + 1; k < len(a.toks) && k < j+6; k++ {
				if a.at(k) == ":" || a.at(k) == "—" {
					if k+2 < len(a.toks) && a.isWord(k+1) {
						return decHit{trig: first, obj: -1, kind: dkAction}, true
					}
					return decHit{}, false
				}
			}
			return decHit{}, false
		case ":", ",", ";":
			return decHit{}, false
		}
	}
	return decHit{}, false
}

// goesTo reads a user's statement of where things go: "Checkpoints go to
// /data/ckpt/summ." The place is a path or a code span; a "never" or
// "not" makes it a rule instead.
func (a *analysis) goesTo() (decHit, bool) {
	if a.role != "user" || a.question || a.cond {
		return decHit{}, false
	}
	for i := 1; i+2 < len(a.toks) && i < 8; i++ {
		w := a.at(i)
		if w != "go" && w != "goes" && w != "live" && w != "lives" {
			continue
		}
		if p := a.at(i - 1); !a.isWord(i-1) || personal(p) || p == "it" || p == "i" || p == "you" || p == "never" || p == "not" || p == "don't" || p == "to" || p == "will" || p == "can" || p == "should" {
			return decHit{}, false
		}
		if n := a.at(i + 1); n != "to" && n != "into" && n != "in" && n != "under" {
			return decHit{}, false
		}
		obj := a.toks[i+2]
		if obj.kind == tCode || strings.Contains(obj.w, "/") {
			return decHit{trig: 0, obj: i + 2, kind: dkOption}, true
		}
		return decHit{}, false
	}
	return decHit{}, false
}

// namedValueStops may not name a setting: verbs of being, pronouns and
// words of a report.
var namedValueStops = map[string]bool{
	"is": true, "are": true, "was": true, "were": true, "be": true, "has": true, "have": true, "had": true,
	"it": true, "this": true, "that": true, "we": true, "i": true, "you": true, "they": true, "there": true,
	"got": true, "took": true, "takes": true, "ran": true, "only": true, "about": true, "around": true,
	"and": true, "or": true, "of": true, "in": true, "on": true, "at": true, "to": true, "for": true,
}

// namedValue reads a user's short statement of a setting's value: two to
// four words naming it, then the value ("Default compression quality
// 0.7.", "Server tick rate 30 Hz for now."), then at most four more
// tokens. It returns the name and the value.
func (a *analysis) namedValue(first int) (string, string, bool) {
	if a.role != "user" || a.question || a.cond || len(a.toks)-first > 12 {
		return "", "", false
	}
	j := first
	for j < len(a.toks) && a.isWord(j) && !hasDigit(a.at(j)) && !namedValueStops[a.at(j)] && !settingsLabelStops[a.at(j)] && !personal(a.at(j)) {
		j++
	}
	if j-first < 2 || j-first > 4 || j >= len(a.toks) || !hasDigit(a.at(j)) {
		return "", "", false
	}
	end := j + 1
	if end < len(a.toks) && len(Values(a.at(j)+" "+a.at(end))) == 1 {
		end++ // the unit
	}
	rest := 0
	for k := end; k < len(a.toks); k++ {
		if t := a.toks[k]; t.kind == tPunct && (t.w == "." || t.w == "!") {
			break
		}
		rest++
	}
	if rest > 4 {
		return "", "", false
	}
	return strings.Join(articleless(words(a.raw(first, j))), " "), strings.ToLower(a.raw(j, end)), true
}

// approvalLabel reads a user's go-ahead that restates what to do after a
// colon: "Yeah do that then: refresh off (-1) while bulk loading, back to
// 1s when the alias swaps." A bare "Yes, do that." states nothing to
// remember.
func (a *analysis) approvalLabel() (decHit, bool) {
	if a.role != "user" || a.question || a.cond {
		return decHit{}, false
	}
	i := 0
	for i < len(a.toks) && (clauseStartFillers[a.at(i)] || a.at(i) == "sure" || a.at(i) == "sounds" || a.at(i) == "good" || a.at(i) == "great" || a.at(i) == "perfect") {
		i++
	}
	switch {
	case a.at(i) == "do" && (a.at(i+1) == "that" || a.at(i+1) == "it" || a.at(i+1) == "this"):
		i += 2
	case a.at(i) == "go" && a.at(i+1) == "with" && (a.at(i+2) == "that" || a.at(i+2) == "it" || a.at(i+2) == "this"):
		i += 3
	case (a.at(i) == "let's" || a.at(i) == "lets") && a.at(i+1) == "do" && (a.at(i+2) == "that" || a.at(i+2) == "it" || a.at(i+2) == "this"):
		i += 3
	default:
		return decHit{}, false
	}
	if a.at(i) == "then" {
		i++
	}
	if a.at(i) != ":" && a.at(i) != "—" || i+3 >= len(a.toks) {
		return decHit{}, false
	}
	return decHit{trig: i, obj: i + 1, kind: dkColon}, true
}

// choreVerbs are what an agent says it will do next to carry the work
// out; "I'll add a test", "I'll update the README" decide nothing.
var choreVerbs = map[string]bool{
	"fix": true, "add": true, "update": true, "write": true, "create": true, "implement": true, "commit": true,
	"push": true, "edit": true, "make": true, "remove": true, "delete": true, "clean": true, "refactor": true,
	"rename": true, "format": true, "do": true, "help": true, "explain": true, "summarize": true, "continue": true,
	"proceed": true, "document": true, "note": true, "mark": true, "report": true, "tell": true, "go": true,
	"need": true, "be": true, "install": true, "build": true, "set": true, "change": true, "modify": true,
	"apply": true, "wire": true, "hook": true, "patch": true, "regenerate": true, "retry": true, "address": true,
	"handle": true, "keep": true, "leave": true, "include": true, "mention": true, "share": true, "send": true,
	"post": true, "reply": true, "respond": true, "answer": true, "provide": true, "give": true, "show": true,
	"walk": true, "outline": true, "draft": true, "prepare": true, "plan": true, "finish": true, "complete": true,
	"let": true, "now": true, "work": true, "call": true, "launch": true, "spawn": true, "delegate": true,
	"compile": true, "execute": true, "deploy": true, "generate": true, "copy": true, "paste": true, "save": true,
	"load": true, "fetch": true, "download": true, "upload": true, "clone": true, "merge": true, "rebase": true,
	"restore": true, "resolve": true, "revisit": true, "return": true, "come": true, "circle": true, "follow": true,
	"dispatch": true, "assign": true, "message": true, "hand": true, "kick": true, "brief": true, "nudge": true,
	"wake": true, "poll": true, "notify": true, "ping": true,
	"pick": true, "tackle": true, "focus": true, "write-up": true, "stop": true, "pause": true, "commit-and-push": true,
}

// assistantChoice reads "I'll <verb> …" from the agent after it looked
// into something: "I'll requeue every 30 seconds", "I'll store keys in
// an idempotency_keys table", "I'll wrap the client in a retry helper
// with three attempts, since …". It is a decision when the verb is no
// narration or chore, the sentence follows what the agent found (an
// earlier sentence of the message, or a reason in its own), and it
// names a concrete how: a number, a name written as code, or "every".
func (a *analysis) assistantChoice(trig, v int) (decHit, bool) {
	switch a.at(trig) {
	case "i'll", "we'll", "will":
	default:
		return decHit{}, false
	}
	w := a.at(v)
	if !a.isWord(v) || !imperativeVerb(w) || narrationVerbs[w] || hedges[w] || choreVerbs[w] || a.at(v+1) == "up" || a.at(v+1) == "it" && a.at(v+2) == "up" {
		return decHit{}, false
	}
	if a.first && a.rationale() < 0 {
		return decHit{}, false
	}
	detail := false
	for j := v + 1; j < len(a.toks) && !detail; j++ {
		t := a.toks[j]
		switch {
		case t.kind == tCode:
			detail = true
		case t.kind != tWord:
		case t.w == "every" || numberWords[t.w] || hasDigit(t.w) && !strings.HasPrefix(t.w, "v") && len(t.w) <= 12:
			detail = true
		case strings.Contains(t.w, "_") || strings.Contains(strings.Trim(t.w, "."), ".") && !strings.Contains(t.w, "/"):
			detail = true
		}
	}
	if !detail {
		return decHit{}, false
	}
	return decHit{trig: trig, obj: -1, kind: dkAction}, true
}

// numberWords are counts written out.
var numberWords = map[string]bool{
	"two": true, "three": true, "four": true, "five": true, "six": true, "seven": true, "eight": true,
	"nine": true, "ten": true, "twice": true, "hourly": true, "nightly": true, "daily": true, "weekly": true,
}

// settingsHead returns the words of a settings sentence before its list:
// up to the first "with", "using" or colon, cleaned.
func (a *analysis) settingsHead() string {
	for j := 1; j < len(a.toks); j++ {
		switch a.at(j) {
		case "with", "using", ":":
			return strings.TrimRight(clean(a.text[a.toks[0].s:a.toks[j].s]), " ,;-")
		}
	}
	return ""
}

// changeVerbs open a clause that changes one setting.
var changeVerbs = map[string]bool{
	"halve": true, "double": true, "triple": true, "drop": true, "raise": true, "lower": true, "bump": true,
	"increase": true, "decrease": true, "reduce": true, "cut": true, "set": true, "use": true, "enable": true,
	"disable": true, "pin": true, "cap": true, "turn": true,
}

// changeList returns the clauses of a request that each change one
// setting, at least two, joined by commas, "and" or "but", each opening
// with a change verb ("halve the batch", "drop the LR to 2e-5"), and the
// words before the first ("Retry the summarizer run"); nil when the
// sentence is no such list.
func (a *analysis) changeList() ([]string, string) {
	var items []string
	head := ""
	valued := false
	start := -1
	// After a label ("Add tail sampling: keep all errors, sample the
	// rest at 10%") or a first clause that decides ("Move them to
	// sidekiq-cron, schedule 02:00 UTC on the 1st") any imperative opens
	// a clause; else only the change verbs do.
	colon := -1
	for j := 1; j < len(a.toks) && j <= 6; j++ {
		if a.at(j) == ":" {
			colon = j
			break
		}
	}
	_, decides := decisionVerbs[a.at(0)]
	// A label that is itself a request ("Add tail sampling:") opens a
	// list of how it is done; a reply's opener ("Yeah do that then:") or
	// a chore ("Continue the mail work:") does not.
	hv := 0
	for hv < colon && clauseStartFillers[a.at(hv)] {
		hv++
	}
	labelled := colon > hv+1 && (imperativeVerb(a.at(hv)) && !narrationVerbs[a.at(hv)] && !choreVerbs[a.at(hv)] && !nonVerbs[a.at(hv)] || a.at(hv) == "add")
	opens := func(j int) bool {
		w := a.at(j)
		if changeVerbs[w] {
			return true
		}
		if !(decides || labelled && j > colon) {
			return false
		}
		switch w {
		case "do", "go", "let", "be", "need", "help", "continue", "proceed", "tell", "show", "explain", "it", "you":
			return false
		}
		return imperativeVerb(w) && !narrationVerbs[w] && !personal(w) && !nonVerbs[w] && !hedges[w]
	}
	flush := func(end int) {
		if start >= 0 && end > start {
			it := strings.ToLower(strings.TrimRight(clean(a.text[a.toks[start].s:a.toks[end-1].e]), " ,;."))
			if n := len(strings.Fields(it)); n >= 2 && n <= 8 {
				items = append(items, it)
				valued = valued || hasDigit(it) || RelativeChange(it)
			}
		}
		start = -1
	}
	for j := 0; j < len(a.toks); j++ {
		w := a.at(j)
		brk := j == 0 || a.at(j-1) == "," || a.at(j-1) == ";" || a.at(j-1) == "and" || a.at(j-1) == "but" || a.at(j-1) == "also" || a.at(j-1) == "then" || j == colon+1
		if brk && opens(j) && a.isWord(j+1) {
			if start >= 0 {
				k := j
				for k > start && (a.at(k-1) == "," || a.at(k-1) == ";" || a.at(k-1) == "and" || a.at(k-1) == "but" || a.at(k-1) == "also" || a.at(k-1) == "then") {
					k--
				}
				flush(k)
			} else if len(items) == 0 && j > 0 {
				k := j
				for k > 0 && (a.at(k-1) == "," || a.at(k-1) == ";" || a.at(k-1) == "and" || a.at(k-1) == "but" || a.at(k-1) == "also" || a.at(k-1) == "then") {
					k--
				}
				if k > 0 {
					head = strings.TrimRight(clean(a.text[a.toks[0].s:a.toks[k-1].e]), " ,;:")
				}
			}
			start = j
			continue
		}
		if start >= 0 && (w == ";" || w == "," && !opens(j+1) && !(a.at(j+1) == "and" && opens(j+2))) {
			flush(j)
		}
	}
	flush(len(a.toks))
	if len(items) < 2 || !valued {
		return nil, ""
	}
	return items, head
}

// toolLinks tie a job to the tool that does it in a statement: "It uses
// Pillow for resizing", "schema changes are applied by dbmate", "new
// pipelines are Dagster assets".
var toolLinks = map[string]bool{
	"uses": true, "use": true, "is": true, "are": true, "by": true, "via": true, "with": true, "on": true,
	"through": true, "in": true,
}

// toolStatement reads the user stating, in the present, which known tool
// does a job in the project: a statement (not an imperative, a question
// or a condition) that names a tool of known role after a linking word
// ("uses", "are", "by", "via", "with", "on"), not negated. The tool is
// the decision's option, so its role is the subject ("dbmate": the
// migration tool) and a later choice of another tool for that job
// replaces it.
func (a *analysis) toolStatement() (decHit, bool) {
	if a.role != "user" || a.delegated || a.question || a.cond || len(a.toks) < 4 {
		return decHit{}, false
	}
	first := 0
	for first < len(a.toks) && clauseStartFillers[a.at(first)] {
		first++
	}
	if w := a.at(first); !personal(w) && imperativeVerb(w) && !nonVerbs[w] && w != "it" && w != "new" && w != "all" && w != "our" && w != "every" && w != "each" && w != "schema" {
		// An imperative or a noun the verb test cannot tell apart: the
		// other rules read requests.
		if !strings.HasSuffix(w, "s") {
			return decHit{}, false
		}
	}
	for j := first + 1; j < len(a.toks); j++ {
		t := a.toks[j]
		if t.kind != tWord {
			continue
		}
		if _, ok := optionRoles[t.w]; !ok {
			continue
		}
		link, away := false, false
		for k := j - 1; k >= first && k >= j-3; k-- {
			switch a.at(k) {
			case "not", "no", "don't", "never", "instead":
				return decHit{}, false
			case "done", "off", "from", "away", "ditch", "drop", "than", "replace", "replacing":
				// "we're done with Airflow", "moving off Jenkins".
				away = true
			}
			link = link || toolLinks[a.at(k)]
		}
		if link && !away {
			return decHit{trig: first, obj: j, kind: dkOption}, true
		}
	}
	return decHit{}, false
}

// insteadOfProhibited reads the way a user gives after a prohibition:
// "don't wait for the backup job in tests, inject a BackupRunner
// interface and fake it". The rule is a constraint; the clause after
// the comma, an imperative naming something concrete, is the decision.
func (a *analysis) insteadOfProhibited() (decHit, bool) {
	if a.role != "user" || a.delegated {
		return decHit{}, false
	}
	neg := -1
	for j := 0; j < len(a.toks) && j < 8; j++ {
		if w := a.at(j); w == "don't" || w == "do" && a.at(j+1) == "not" || w == "never" {
			neg = j
			break
		}
	}
	if neg < 0 {
		return decHit{}, false
	}
	for j := neg + 2; j+1 < len(a.toks); j++ {
		if a.at(j) != "," && a.at(j) != ";" {
			continue
		}
		v := j + 1
		for a.at(v) == "just" || a.at(v) == "instead" || a.at(v) == "and" {
			v++
		}
		w := a.at(v)
		if !a.isWord(v) || !imperativeVerb(w) || narrationVerbs[w] || personal(w) || nonVerbs[w] || w == "it" || w == "you" {
			continue
		}
		for k := v + 1; k < len(a.toks) && k <= v+5; k++ {
			t := a.toks[k]
			if t.kind == tCode || t.kind == tWord && (hasDigit(t.w) || strings.Contains(t.w, "_") || a.text[t.s:t.e] != t.w && t.e-t.s > 1) {
				return decHit{trig: v, obj: -1, kind: dkAction}, true
			}
		}
		return decHit{}, false
	}
	return decHit{}, false
}

// weDo reads the user stating what the system does, in the present:
// "we store the response for 24h", "we sign every export with the
// release key". The clause opens with "we" and a present verb (no
// auxiliary, no narration) and names a value or something concrete.
func (a *analysis) weDo() (decHit, bool) {
	if a.role != "user" || a.delegated {
		return decHit{}, false
	}
	for j := 0; j+2 < len(a.toks); j++ {
		if a.at(j) != "we" || !(j == 0 || a.clauseBreak(j-1) || a.at(j-1) == "," || a.at(j-1) == "and") {
			continue
		}
		w := a.at(j + 1)
		if !a.isWord(j+1) || !imperativeVerb(w) || narrationVerbs[w] || hedges[w] || nonVerbs[w] || choreVerbs[w] && w != "keep" || w == "need" || w == "want" || w == "can" || w == "should" || w == "must" || w == "will" {
			continue
		}
		for k := j + 2; k < len(a.toks) && k <= j+9; k++ {
			t := a.toks[k]
			if t.kind == tPunct && t.w != "-" {
				break
			}
			if len(Values(a.text[t.s:a.sn.e])) > 0 && hasDigit(t.w) || t.kind == tCode || strings.Contains(t.w, "_") {
				return decHit{trig: j + 1, obj: -1, kind: dkAction}, true
			}
		}
	}
	return decHit{}, false
}

// configDefault reads the user naming a setting and its default:
// "Access token lifetime is the config key auth.access_ttl, default
// 15m." The option is the setting's name.
func (a *analysis) configDefault() (decHit, bool) {
	if a.role != "user" || a.delegated {
		return decHit{}, false
	}
	def := -1
	for j := 1; j+1 < len(a.toks); j++ {
		if a.at(j) == "default" && (a.at(j-1) == "," || a.at(j+1) == "is" || a.at(j+1) == ":" || hasDigit(a.at(j+1))) {
			def = j
			break
		}
	}
	if def < 0 {
		return decHit{}, false
	}
	for k := def - 1; k >= 0 && k >= def-6; k-- {
		t := a.toks[k]
		if t.kind == tCode || t.kind == tWord && (strings.Contains(t.w, "_") || strings.Count(strings.Trim(t.w, "."), ".") > 0 && !hasDigit(t.w[:1])) {
			return decHit{trig: 0, obj: k, kind: dkOption}, true
		}
	}
	return decHit{}, false
}

package memtext

import "strings"

// reporters, before a modal, make the sentence reported speech: "the
// error says the token must not be empty".
var reporters = map[string]bool{
	"says": true, "said": true, "reads": true, "complains": true, "reports": true, "reported": true, "claims": true,
	"warns": true, "warned": true, "mentions": true, "mentioned": true, "states": true, "stated": true,
	"prints": true, "printed": true, "shows": true, "showed": true, "complained": true, "thought": true,
	"assumed": true, "knows": true, "guarantees": true, "ensures": true, "assumes": true, "means": true,
	"documentation": true, "docs": true, "explains": true, "describes": true,
}

// predictions after "should" make it a forecast, not a requirement: "this
// should fix it", "you should see", "that should be enough".
var predictions = map[string]bool{
	"pass": true, "fail": true, "work": true, "fix": true, "see": true, "take": true, "help": true,
	"resolve": true, "solve": true, "succeed": true, "compile": true, "show": true, "appear": true,
	"arrive": true, "land": true, "cover": true, "finish": true, "complete": true, "improve": true, "speed": true,
	"reduce": true, "matter": true, "happen": true, "break": true, "affect": true, "get": true, "go": true,
	"kick": true, "notice": true, "receive": true, "now": true, "hopefully": true, "probably": true,
	"be": false, "do": true, "suffice": true, "clear": true, "unblock": true, "address": true, "make": true,
	"give": true, "return": false, "catch": true, "shave": true, "cut": true, "save": true, "look": true,
}

// predictedStates after "should be" make it a forecast: "should be enough".
var predictedStates = map[string]bool{
	"enough": true, "fine": true, "ready": true, "good": true, "ok": true, "okay": true, "able": true,
	"done": true, "there": true, "available": true, "visible": true, "gone": true, "back": true, "faster": true,
	"quicker": true, "better": true, "fixed": true, "resolved": true, "working": true, "straightforward": true,
	"easy": true, "simple": true, "quick": true, "possible": true, "around": true, "about": true, "here": true,
	"in": true, "up": true, "it": true, "all": true, "safe": true, "present": true, "much": true, "no": true,
	"green": true, "passing": true, "sufficient": true, "correct": true, "the": true, "a": true, "an": true,
}

// epistemicBe after "must be" make it an inference: "this must be the
// bug", "it must be something in the environment".
var epistemicBe = map[string]bool{
	"the": true, "why": true, "what": true, "where": true, "how": true, "because": true, "something": true,
	"somewhere": true, "some": true, "someone": true, "too": true, "it": true, "that": true, "this": true,
	"due": true, "from": true, "related": true, "wrong": true, "broken": true, "stale": true, "missing": true,
	"off": true, "our": true, "my": true, "your": true, "his": true, "their": true, "caused": true, "coming": true,
	"happening": true, "running": true, "using": true, "getting": true, "doing": true, "a": false, "one": true,
	"nice": true, "hard": true, "confusing": true, "frustrating": true, "cached": true, "set": false, "loading": true,
}

// nonVerbs after an initial "always"/"never" mean it is not an
// imperative: "Never mind", "Always happy to help", "Never heard of it".
var nonVerbs = map[string]bool{
	"mind": true, "heard": true, "seen": true, "been": true, "done": true, "happy": true, "glad": true,
	"true": true, "false": true, "good": true, "bad": true, "fine": true, "nice": true, "great": true,
	"sure": true, "available": true, "possible": true, "welcome": true, "ready": true, "here": true,
	"there": true, "the": true, "a": true, "an": true, "this": true, "that": true, "these": true, "those": true,
	"it": true, "its": true, "on": true, "off": true, "in": true, "out": true, "up": true, "down": true,
	"again": true, "once": true, "twice": true, "more": true, "less": true, "enough": true, "late": true,
	"early": true, "worked": true, "mostly": true, "usually": true, "gonna": true, "really": true, "quite": true,
	"so": true, "too": true, "the same": true, "same": true, "easy": true, "fun": true, "a problem": true,
	"ever": false, "knew": true, "thought": true, "got": true, "had": true, "was": true, "is": true, "were": true,
	"been.": true, "before": true, "after": true, "works": true, "fails": true, "passes": true, "returns": true,
	"happens": true, "ran": true, "saw": true, "tried": true, "forget": false, "trust": false,
	"nil": true, "null": true, "none": true, "empty": true, "zero": true, "negative": true, "blank": true,
	"undefined": true, "exceeds": true, "changes": true, "nan": true,
}

// imperativeVerb reports whether w can be the verb of an imperative
// after "always", "never", "do not": a base form, not a participle, an
// -ing form, an adverb or a third-person form.
func imperativeVerb(w string) bool {
	if w == "" || nonVerbs[w] {
		return false
	}
	if w[0] >= '0' && w[0] <= '9' {
		return false
	}
	switch w {
	case "need", "embed", "feed", "proceed", "exceed", "succeed", "shed", "seed", "bring", "ping", "pass",
		"process", "access", "address", "bypass", "discuss", "express", "compress", "press", "guess", "miss",
		"focus", "bless", "toss", "dismiss":
		return true
	}
	for _, suf := range []string{"ed", "ing", "ly", "ous", "ful"} {
		if strings.HasSuffix(w, suf) && len(w) > len(suf)+2 {
			return false
		}
	}
	if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3 {
		return false
	}
	return true
}

// ruleScopeWords say where a rule holds, between "rule for" and its
// colon.
var ruleScopeWords = map[string]bool{"this": true, "the": true, "our": true, "repo": true, "repository": true,
	"project": true, "codebase": true, "team": true, "service": true, "everyone": true, "all": true, "of": true, "us": true}

// softImperatives after "don't"/"do not" are courtesies, not rules.
var softImperatives = map[string]bool{
	"worry": true, "hesitate": true, "know": true, "think": true, "mind": true, "bother": true, "see": true,
	"understand": true, "have": false, "get": true, "believe": true, "remember": true, "recall": true,
	"want": true, "need": true, "like": true, "care": true,
}

// constraint reports whether the sentence states a requirement, with its
// modal and whether it forbids.
func (a *analysis) constraint() (string, bool, bool) {
	if a.question || a.cond {
		return "", false, false
	}
	for i := 0; i < len(a.toks); i++ {
		t := a.toks[i]
		if t.kind != tWord {
			continue
		}
		modal, neg, ok := a.constraintAt(i)
		if !ok {
			continue
		}
		for j := a.sentenceClause(i); j < i; j++ {
			if reporters[a.toks[j].w] {
				return "", false, false
			}
		}
		return modal, neg, true
	}
	return "", false, false
}

// constraintAt tries the requirement patterns whose trigger is token i.
func (a *analysis) constraintAt(i int) (string, bool, bool) {
	w := a.toks[i].w
	next := a.at(i + 1)
	if a.role == "assistant" {
		// The agent's imperatives are advice to the reader ("Make sure
		// you have Node 18", "Never commit your .env", "You must restart
		// the server"), not the project's rules; its "X must …" about the
		// code is kept.
		switch w {
		case "never", "always", "do", "don't", "dont", "make":
			return "", false, false
		case "must", "mustn't":
			if a.at(i-1) == "you" {
				return "", false, false
			}
		}
	}
	switch w {
	case "must", "mustn't":
		subj := a.at(i - 1)
		if subj == "i" || subj == "there" || a.hedgedModal(i) {
			return "", false, false
		}
		j := i + 1
		neg := w == "mustn't"
		modal := "must"
		switch next {
		case "not", "never":
			neg = true
			modal = "must not"
			j++
		case "always":
			j++
		}
		if neg && w == "mustn't" {
			modal = "must not"
		}
		switch a.at(j) {
		case "have", "'ve":
			v := a.at(j + 1)
			if strings.HasSuffix(v, "ly") {
				v = a.at(j + 2) // "must have partially applied"
			}
			if v == "been" || participle(v) || subj == "you" && a.role == "assistant" {
				return "", false, false
			}
		case "be":
			n := a.at(j + 1)
			if epistemicBe[n] && !neg || (subj == "this" || subj == "that") && (n == "a" || n == "an") {
				return "", false, false
			}
		case "":
			return "", false, false
		}
		return modal, neg, true
	case "should", "shouldn't":
		subj := a.at(i - 1)
		if subj == "i" || a.role == "assistant" || a.hedgedModal(i) {
			// The agent's "should" describes or predicts: "the config
			// should include X", "this should pass now".
			return "", false, false
		}
		j := i + 1
		neg := w == "shouldn't"
		modal := "should"
		for {
			switch a.at(j) {
			case "not", "never":
				neg = true
				j++
				continue
			case "always", "also", "still", "really", "only", "now", "definitely", "ideally":
				if a.at(j) == "now" {
					return "", false, false
				}
				j++
				continue
			}
			break
		}
		if neg {
			modal = "should not"
		}
		v := a.at(j)
		if !a.isWord(j) || v == "have" || predictions[v] || !imperativeVerb(v) && v != "be" {
			return "", false, false
		}
		if v == "be" && predictedStates[a.at(j+1)] {
			return "", false, false
		}
		return modal, neg, true
	case "never":
		if a.at(i-1) == "should" || a.at(i-1) == "must" || a.at(i-1) == "shall" {
			return "", false, false // read at the modal
		}
		if a.role == "user" && a.neverOfThing(i) {
			// "Refresh tokens are never written to logs", "customer
			// emails never go into logs".
			return "never", true, true
		}
		v := i + 1
		for a.at(v) == "," || a.at(v) == "ever" {
			v++
		}
		if (a.clauseStart(i) || a.at(i-1) == "please" || a.afterComma(i)) && a.isWord(v) && imperativeVerb(a.at(v)) {
			return "never", true, true
		}
	case "always":
		if a.at(i-1) == "should" || a.at(i-1) == "must" {
			return "", false, false
		}
		if (a.clauseStart(i) || a.at(i-1) == "please") && a.isWord(i+1) && imperativeVerb(next) {
			return "always", false, true
		}
	case "do", "don't", "dont":
		j := i + 1
		if w == "do" {
			if next != "not" {
				return "", false, false
			}
			j++
		}
		if !a.clauseStart(i) {
			return "", false, false
		}
		if a.at(j) == "," {
			// "Do not, under any circumstances, delete user data."
			for k := j + 1; k < len(a.toks) && k < j+7; k++ {
				if a.at(k) == "," {
					j = k + 1
					break
				}
			}
		}
		if a.at(j) == "ever" {
			j++
		}
		v := a.at(j)
		if !a.isWord(j) || softImperatives[v] || !imperativeVerb(v) {
			return "", false, false
		}
		return "do not", true, true
	case "make":
		if next == "sure" && a.clauseStart(i) {
			n := a.at(i + 2)
			neg := n == "not" || n == "to" && a.at(i+3) == "not" || n == "that" && (a.at(i+3) == "no" || a.at(i+3) == "nothing") || n == "you" && a.at(i+3) == "don't" || n == "no" || n == "nothing"
			return "make sure", neg, true
		}
	case "keep":
		// "Keep the binary under 20 MB", "please keep commits small".
		if a.role != "assistant" && (a.clauseStart(i) || a.at(i-1) == "please") && a.keepState(i) {
			return "must", false, true
		}
	case "avoid":
		if a.role != "assistant" && (a.clauseStart(i) || a.at(i-1) == "please" || a.at(i-1) == "always") && a.isWord(i+1) {
			return "must not", true, true
		}
	case "may", "can't", "cannot", "can":
		// "You may not change the schema", "the on-disk format can't
		// change", "you can't push to main".
		if a.role == "assistant" || a.hedgedModal(i) {
			return "", false, false
		}
		j := i + 1
		if w == "may" || w == "can" {
			if a.at(j) != "not" {
				return "", false, false
			}
			j++
		}
		subj := a.at(i - 1)
		if subj == "you" || subj == "nobody" || subj == "agents" {
			if a.isWord(j) && imperativeVerb(a.at(j)) && !softImperatives[a.at(j)] {
				return "must not", true, true
			}
			return "", false, false
		}
		if subj == "" || personal(subj) || subj == "it" || subj == "this" || subj == "that" || subj == "i" {
			return "", false, false
		}
		switch a.at(j) {
		case "change", "break", "grow", "exceed", "depend", "shrink", "regress":
			return "must not", true, true
		case "be":
			switch a.at(j + 1) {
			case "changed", "modified", "renamed", "removed", "deleted", "broken", "reordered", "reused":
				return "must not", true, true
			}
		}
	case "important", "crucial", "essential", "critical", "vital", "mandatory":
		// "It's important that the CLI stays backwards compatible."
		if a.role != "assistant" && a.at(i+1) == "that" && !a.hedgedModal(i) && !personal(a.at(i+2)) && a.at(i+2) != "you" && a.at(i+2) != "i" {
			return "must", false, true
		}
	case "requires", "require":
		// "Every PR requires a review."
		if a.role != "assistant" && a.quantified(i) {
			return "must", false, true
		}
	case "need":
		// "All new endpoints need to be behind auth."
		subj := a.at(i - 1)
		if a.role == "assistant" || a.at(i+1) != "to" || subj == "" || personal(subj) || subj == "you" || subj == "i" || subj == "it" ||
			subj == "this" || subj == "that" || subj == "they" || subj == "things" || subj == "still" || subj == "just" || subj == "also" || subj == "will" || subj == "might" || subj == "may" || subj == "don't" || subj == "not" || subj == "which" || a.hedgedModal(i) {
			return "", false, false
		}
		// Only a rule over a kind of thing: "all/every/each/new X",
		// a plural.
		from := a.clauseFrom(i)
		quant := false
		for j := from; j < i; j++ {
			switch a.at(j) {
			case "all", "every", "each", "any", "new":
				quant = true
			}
		}
		if !quant && !(strings.HasSuffix(subj, "s") && !strings.HasSuffix(subj, "ss")) {
			return "", false, false
		}
		v := a.at(i + 2)
		if !a.isWord(i+2) || predictions[v] || v == "be" && (epistemicBe[a.at(i+3)] || predictedStates[a.at(i+3)] && a.at(i+3) != "in") {
			return "", false, false
		}
		return "must", false, true
	case "has", "have", "needs":
		// "every change has to stay backwards compatible", "you have
		// to rebase first": a rule from whoever is not the agent.
		if p := a.at(i - 1); w == "needs" && next != "to" && a.role != "assistant" && a.quantified(i) && a.isWord(i+1) && p != "it" && p != "this" && p != "that" && !personal(p) {
			// "Every PR needs a changelog entry."
			return "must", false, true
		}
		if next != "to" || a.role == "assistant" || a.hedgedModal(i) {
			return "", false, false
		}
		subj := a.at(i - 1)
		switch subj {
		case "", "i", "it", "this", "that", "which", "what", "who", "there", "one", "still", "just", "also", ",", "will", "would", "might", "may":
			return "", false, false
		}
		if w == "have" && subj != "we" && subj != "you" && subj != "always" && !a.quantified(i) || w == "needs" && personal(subj) {
			return "", false, false
		}
		v := a.at(i + 2)
		neg := false
		if v == "not" || v == "never" {
			neg = true
			v = a.at(i + 3)
		}
		if !a.isWord(i+2) || predictions[v] || v == "be" && (epistemicBe[a.at(i+3)] || predictedStates[a.at(i+3)]) || !imperativeVerb(v) && v != "be" {
			return "", false, false
		}
		if neg {
			return "must not", true, true
		}
		return "must", false, true
	case "stay", "remain":
		// "Stay within the existing package layout."
		if a.role != "assistant" && a.clauseStart(i) {
			switch next {
			case "within", "inside", "under", "below", "compatible", "backwards", "backward":
				return "must", false, true
			}
		}
	case "off-limits", "off":
		// "Prod is off limits."
		if a.role != "assistant" && (w == "off-limits" || next == "limits") {
			if p := a.at(i - 1); p == "is" || p == "are" || p == "stays" {
				return "must not", true, true
			}
		}
	case "frozen":
		switch a.at(i - 1) {
		case "is", "are", "stays", "stay", "remains", "remain", "be", "it's", "that's":
			if a.role != "assistant" && !a.hedgedModal(i) && a.at(i-2) != "not" {
				return "must not", true, true
			}
		}
	case "stone":
		// "its field names are set in stone".
		if a.role == "user" && a.at(i-1) == "in" && a.at(i-2) == "set" && a.at(i-3) != "not" && !a.hedgedModal(i) {
			return "must not", true, true
		}
	case "non-negotiable":
		if a.role == "user" {
			return "must", false, true
		}
	case "ceiling", "limit", "cap":
		// "The build has a hard ceiling of 5 KB."
		if a.role == "user" && a.at(i-1) == "hard" && a.at(i+1) == "of" {
			return "must", false, true
		}
	case "convention", "conventions":
		// "Convention, please follow it: staging models are stg_…".
		if a.role == "user" && a.labelStart(i) {
			for j := i + 1; j < len(a.toks) && j < i+7; j++ {
				if a.at(j) == ":" && j+1 < len(a.toks) {
					return "must", false, true
				}
			}
		}
	case "rule", "rules":
		// "Rule one: …", "Hard rule: …", "Ground rules: …", "Ground
		// rule for this repo: …".
		j := i + 1
		for j < len(a.toks) && j < i+3 && a.at(j) != ":" {
			j++
		}
		if a.at(j) != ":" && a.at(i+1) == "for" {
			// Where the rule holds: "for this repo", "for the team".
			j = i + 2
			for j < len(a.toks) && j < i+6 && ruleScopeWords[a.at(j)] {
				j++
			}
		}
		if a.at(j) != ":" || j+1 >= len(a.toks) || a.role == "assistant" {
			return "", false, false
		}
		for k := i - 1; k >= 0; k-- {
			switch a.at(k) {
			case "hard", "ground", "golden", "one", "first", "house", "the", "a", "important", "strict", "new":
				continue
			}
			return "", false, false
		}
		for k := j + 1; k < len(a.toks); k++ {
			switch a.at(k) {
			case "nobody", "never", "not", "don't", "no", "nothing", "cannot", "can't", "mustn't":
				return "must not", true, true
			}
		}
		return "must", false, true
	case "no":
		if a.role == "user" && a.noRule(i) {
			return "must not", true, true
		}
		// "No new dependencies without asking me first."
		if a.role == "assistant" || !a.clauseStart(i) {
			return "", false, false
		}
		// "No breaking changes to the config format."
		for j := i + 1; j < len(a.toks); j++ {
			switch a.at(j) {
			case "were", "was", "is", "are", "needed", "found", "made", "happened", "detected", "required", "so", "yet":
				// "No changes were needed": a report.
				return "", false, false
			}
		}
		for j := i + 1; j < len(a.toks) && j < i+4; j++ {
			switch a.at(j) {
			case "changes", "renames", "edits", "dependencies", "deps", "pushes", "force-pushes", "commits", "writes",
				"deletions", "globals", "panics", "secrets", "breaking", "merges":
				return "must not", true, true
			}
		}
		for j := i + 1; j < len(a.toks) && j < i+6; j++ {
			if a.toks[j].kind == tPunct {
				break
			}
			if a.at(j) == "without" || a.at(j) == "unless" || a.at(j) == "outside" || a.at(j) == "until" {
				return "must not", true, true
			}
		}
	case "nobody":
		// "Nobody pushes to main directly."
		if a.role == "assistant" || !a.clauseStart(i) || !a.isWord(i+1) {
			return "", false, false
		}
		switch next {
		case "knows", "is", "was", "cares", "uses", "has", "had", "wants", "likes", "reads", "seems", "thinks", "else", "will", "would":
			return "", false, false
		}
		if strings.HasSuffix(next, "s") || next == "should" || next == "may" || next == "can" || next == "gets" {
			return "must not", true, true
		}
	case "from":
		// "From now on, run the linter first."
		if next == "now" && a.at(i+2) == "on" && i == 0 && a.at(i+3) == "," && a.role != "assistant" && a.isWord(i+4) && imperativeVerb(a.at(i+4)) {
			return "always", false, true
		}
	case "under":
		if next == "no" && a.at(i+2) == "circumstances" {
			return "under no circumstances", true, true
		}
	case "only":
		if next == "use" && a.clauseStart(i) {
			return "only", false, true
		}
		// "terraform apply for prod only ever runs from the Atlantis
		// workflow", "product images only through next/image".
		if p := a.at(i - 1); a.role == "user" && !a.clauseStart(i) && !a.hedgedModal(i) && (next == "ever" && a.isWord(i+2) || next == "through" || next == "via") && a.isWord(i-1) && !personal(p) && p != "it" && p != "i" && p != "you" {
			return "only", false, true
		}
		v := next
		if v == "ever" {
			v = a.at(i + 2)
		}
		if a.clauseStart(i) && a.role != "assistant" && onlyVerbs[v] {
			return "only", false, true
		}
	case "use":
		if next == "only" && a.clauseStart(i) {
			return "only", false, true
		}
	case "required":
		p := a.at(i - 1)
		if (p == "is" || p == "are" || p == "be" || p == "always") && a.at(i-2) != "not" && !a.hedgedModal(i) {
			if n := next; n == "" || n == "to" || n == "for" || n == "." || n == "," || n == ";" || n == "when" || n == "in" || n == "by" || n == "on" {
				return "required", false, true
			}
		}
	case "allowed", "permitted":
		if a.at(i-1) == "not" && (a.at(i-2) == "is" || a.at(i-2) == "are" || a.at(i-2) == "you're" || a.at(i-2) == "we're" || a.at(i-2) == "agents" && a.role != "assistant") {
			return "must not", true, true
		}
		// "No force pushes allowed."
		if a.role != "assistant" {
			for j := i - 1; j >= 0 && j >= i-6; j-- {
				if a.toks[j].kind == tPunct {
					break
				}
				if a.at(j) == "no" && (a.clauseStart(j) || a.afterComma(j) || a.at(j-1) == ",") {
					return "must not", true, true
				}
			}
		}
	case "forbidden", "prohibited":
		if p := a.at(i - 1); p == "is" || p == "are" || p == "strictly" {
			return "must not", true, true
		}
	}
	return "", false, false
}

// quantified reports whether the clause before token i opens with a
// quantifier over a kind of thing: "every PR", "all new endpoints",
// "each migration".
func (a *analysis) quantified(i int) bool {
	for j := a.clauseFrom(i); j < i; j++ {
		switch a.at(j) {
		case "every", "all", "each", "any":
			return true
		}
	}
	return false
}

// onlyVerbs may follow an opening "only" ("Only ever write to …").
var onlyVerbs = map[string]bool{
	"use": true, "write": true, "read": true, "call": true, "run": true, "deploy": true, "push": true, "merge": true,
	"commit": true, "import": true, "touch": true, "edit": true, "change": true, "modify": true, "add": true,
	"return": true, "log": true, "expose": true, "accept": true, "store": true, "talk": true, "access": true,
	"depend": true, "release": true, "publish": true, "migrate": true, "install": true,
}

// sentenceClause returns the first token of the ';'- or ':'-delimited
// clause holding token i.
func (a *analysis) sentenceClause(i int) int {
	for j := i - 1; j >= 0; j-- {
		if t := a.toks[j]; t.kind == tPunct && (t.w == ";" || t.w == ":" || t.w == "—") {
			return j + 1
		}
	}
	return 0
}

// afterComma reports whether token i follows a comma that follows a
// constraint's opening ("Always use pnpm, never npm").
func (a *analysis) afterComma(i int) bool {
	return a.at(i-1) == "," && (a.at(0) == "always" || a.at(0) == "never" || a.at(0) == "use")
}

// hedgedModal reports whether a hedge sits in the modal's clause before it
// ("I'm not sure we must", "if it must").
func (a *analysis) hedgedModal(i int) bool {
	for j := a.clauseFrom(i); j < i; j++ {
		switch a.toks[j].w {
		case "if", "whether", "unless", "sure", "wonder", "think", "maybe", "perhaps", "when", "once":
			return true
		}
	}
	return false
}

// participle reports whether w is a past participle ("changed", "been").
func participle(w string) bool {
	switch w {
	case "been", "got", "gotten", "done", "made", "seen", "run", "set", "put", "had", "left", "lost", "read",
		"written", "broken", "taken", "come", "gone", "hit", "cut", "let", "forgotten", "known", "given",
		"built", "sent", "meant", "thrown", "drawn", "shown", "begun", "become", "found":
		return true
	}
	return strings.HasSuffix(w, "ed") && len(w) > 3
}

// markers appends the TODO and FIXME findings of the sentence: a marker
// word (TODO:, FIXME(x):, XXX:) opening a clause, and, from the assistant,
// the progress phrases ("still need to", "remaining work:", "left to do",
// "not yet implemented", "follow-up:").
func (a *analysis) markers(out []Finding) []Finding {
	todo, fixme := false, false
	for i, t := range a.toks {
		if t.kind != tWord {
			continue
		}
		switch t.w {
		case "todo", "fixme", "xxx":
			if !a.isMarker(i) {
				continue
			}
			if t.w == "todo" {
				todo = true
			} else {
				fixme = true
			}
		}
	}
	if !todo && a.role == "assistant" && !a.question && !a.cond {
		todo = a.progressTodo()
	}
	if todo {
		out = append(out, a.finding(TypeTodo, nil))
	}
	if fixme {
		out = append(out, a.finding(TypeFixme, nil))
	}
	return out
}

// isMarker reports whether the word at i is an upper-case TODO, FIXME or
// XXX used as a marker: followed by ':', '(' … ')' ':', or a dash, and
// opening its clause ("There's a FIXME: …" too).
func (a *analysis) isMarker(i int) bool {
	t := a.toks[i]
	raw := a.text[t.s:t.e]
	if raw != strings.ToUpper(raw) {
		return false
	}
	j := i + 1
	if a.at(j) == "(" {
		for j < len(a.toks) && a.at(j) != ")" && j < i+6 {
			j++
		}
		j++
	}
	if n := a.at(j); n != ":" && n != "—" {
		return false
	}
	if a.clauseStart(i) {
		return true
	}
	switch a.at(i - 1) {
	case "a", "an", "one", "another", "new", "remaining", "open":
		return true
	}
	return false
}

// progressTodo reports the assistant's phrases for work not done yet.
// Narration of the next step ("Let me fix the two errors and then the
// remaining work", "Now I'll do the remaining tasks") is not one, nor is
// a label that opens a list ("Still need to:"): TodoList reads its items.
func (a *analysis) progressTodo() bool {
	if a.narration() || a.lesson() || a.toks[len(a.toks)-1].w == ":" && len(a.toks) <= 6 {
		return false
	}
	if w := a.at(0); (w == "remaining" || w == "pending" || w == "outstanding") && a.at(1) == ":" && len(a.toks) > 3 && a.at(2) != "nothing" && a.at(2) != "none" {
		return true
	}
	// "Next steps: wire the exporter.", "Still to do: the installer."
	for k := 1; k < len(a.toks) && k < 5; k++ {
		if a.at(k) == ":" {
			if todoLabel(a.text[a.toks[0].s:a.toks[k].e]) && k+2 < len(a.toks) && a.at(k+1) != "nothing" && a.at(k+1) != "none" {
				return true
			}
			break
		}
	}
	for i, t := range a.toks {
		switch t.w {
		case "haven't", "hasn't":
			// "I haven't added tests for the CSV path yet."
			if participle(a.at(i+1)) && !narrationVerbs[strings.TrimSuffix(a.at(i+1), "ed")] && a.at(i+1) != "read" && a.at(i+1) != "checked" && a.at(i+1) != "looked" && a.at(i+1) != "verified" && a.at(i+1) != "tested" && a.hasWordAfter(i, "yet") {
				return true
			}
		case "still":
			switch a.at(i + 1) {
			case "broken", "missing", "unresolved", "unimplemented", "pending":
				// "still fails" is a failing test's or command's thread.
				if a.at(i-1) != "not" {
					return true
				}
			}
			switch n := a.at(i + 1); n {
			case "need", "needs", "have", "has":
				if a.at(i+2) == "to" && a.at(i-1) != "don't" && a.at(i-1) != "not" {
					return true
				}
			case "to":
				if a.at(i+2) == "do" || a.at(i+2) == "be" && participle(a.at(i+3)) && a.at(i+3) != "running" {
					return true
				}
			}
		case "remaining":
			if n := a.at(i + 1); (n == "work" || n == "item" || n == "items" || n == "tasks" || n == "todos") && (a.clauseStart(i) || a.at(i-1) == "one" || a.at(i-1) == "the") {
				return true
			}
		case "left":
			if a.at(i+1) == "to" && a.at(i+2) == "do" {
				return true
			}
		case "not", "isn't", "aren't":
			j := i + 1
			if a.at(j) == "yet" {
				j++
			}
			if (a.at(j) == "implemented" || a.at(j) == "wired" || a.at(j) == "supported") && (a.at(j-1) == "yet" || a.at(j+1) == "yet") {
				return true
			}
		case "follow-up", "followup":
			if a.at(i+1) == ":" && a.clauseStart(i) {
				return true
			}
		case "follow":
			if a.at(i+1) == "up" && a.at(i+2) == ":" && a.clauseStart(i) {
				return true
			}
		}
	}
	return false
}

// narration reports whether the sentence opens by saying what the agent
// does next: "Let me …", "Now I'll …", "I'm going to …", "Next, I will …".
func (a *analysis) narration() bool {
	i := 0
	for i < len(a.toks) && (clauseStartFillers[a.at(i)] || a.at(i) == "first" || a.at(i) == "next" || a.at(i) == "," || a.at(i) == "great" || a.at(i) == "perfect" || a.at(i) == "good") {
		i++
	}
	switch a.at(i) {
	case "let":
		return a.at(i+1) == "me" || a.at(i+1) == "us"
	case "let's", "lets", "i'll", "i'm", "we'll":
		return a.at(i) != "i'm" || a.at(i+1) == "going" || a.at(i+1) == "now"
	case "i":
		return a.at(i+1) == "will" || a.at(i+1) == "am"
	}
	return false
}

// lesson reports whether the sentence states what was learned or how
// something works ("Per the docs, …", "Turns out …", "Lesson: …"): no
// work left open.
func (a *analysis) lesson() bool {
	i := 0
	for i < len(a.toks) && clauseStartFillers[a.at(i)] {
		i++
	}
	switch a.at(i) {
	case "per", "according", "turns", "lesson", "lessons", "learned", "til", "apparently", "note", "gotcha":
		return true
	case "it":
		return a.at(i+1) == "turns"
	}
	return false
}

// blockSubjects may be blocked: the speaker, the team, the work.
var blockSubjects = map[string]bool{
	"i": true, "we": true, "i'm": true, "we're": true, "this": true, "that": true, "it": true, "it's": true,
	"that's": true, "deploy": true, "deployment": true, "release": true, "pr": true, "task": true, "work": true,
	"change": true, "migration": true, "feature": true, "ticket": true, "rollout": true, "merge": true,
	"upgrade": true, "launch": true, "fix": true, "story": true, "issue": true, "step": true, "progress": true,
	"am": true, "are": true, "currently": true, "still": true, "completely": true, "effectively": true, "now": true,
	"totally": true, "fully": true, "is": true,
}

// blocker reports whether the sentence says the work cannot go on:
// "Blocker:", "blocked on/by/until" with the work or the speaker as the
// subject, "can't proceed until", "cannot continue without", "waiting on
// the team to approve".
func (a *analysis) blocker() bool {
	if a.question || a.cond {
		return false
	}
	for i, t := range a.toks {
		switch t.w {
		case "blocker", "blockers", "blocked":
			if a.at(i+1) == ":" && a.clauseStart(i) {
				return true
			}
			if t.w != "blocked" {
				continue
			}
			switch a.at(i + 1) {
			case "on", "by", "until", ":", "—", "waiting", "pending":
			default:
				continue
			}
			if a.clauseStart(i) {
				return true
			}
			for j := i - 1; j >= 0 && j >= i-4; j-- {
				w := a.toks[j].w
				if w == "is" || w == "am" || w == "are" || w == "currently" || w == "still" || w == "now" || w == "completely" || w == "effectively" {
					continue
				}
				if blockSubjects[w] {
					return true
				}
				break
			}
		case "proceed", "continue", "progress", "move":
			p := a.at(i - 1)
			if !(p == "can't" || p == "cannot" || p == "unable" || p == "to" && a.at(i-2) == "unable" || p == "not" && a.at(i-2) == "can") {
				continue
			}
			if t.w == "move" && a.at(i+1) != "forward" {
				continue
			}
			for j := i + 1; j < len(a.toks) && j < i+4; j++ {
				switch a.toks[j].w {
				case "until", "without", "unless", "before":
					return true
				}
			}
			if a.at(i+1) == "." || a.at(i+1) == "" || a.at(i+1) == ":" || a.at(i+1) == "—" {
				return true
			}
		case "waiting":
			n := a.at(i + 1)
			if n != "on" && n != "for" {
				continue
			}
			if !(a.clauseStart(i) || a.subjectBefore(i)) {
				continue
			}
			for j := i + 2; j < len(a.toks) && j < i+7; j++ {
				switch a.toks[j].w {
				case "you", "your", "team", "approval", "review", "access", "credentials", "key", "token", "permission",
					"permissions", "answer", "confirmation", "decision", "response", "reply", "sign-off", "input",
					"someone", "them", "him", "her", "ops", "security", "legal", "upstream", "vendor", "maintainers":
					return true
				}
			}
		}
	}
	return false
}

// openQuestion reports whether a question asks the reader something. A
// question addressed to the reader ("Would you like…", "Should I…") is
// open; any other question is open only when no answer follows it in the
// message (a rhetorical question answers itself).
func (a *analysis) openQuestion(ss []sent, si int) bool {
	first := 0
	for first < len(a.toks) && (a.toks[first].kind != tWord || clauseStartFillers[a.toks[first].w] && a.toks[first].w != "so") {
		first++
	}
	// "One question: should …", "Question for you: …", "Open question —
	// do we …": the question follows the label.
	switch a.at(first) {
	case "would", "could", "can", "will", "do", "did", "are", "shall", "should", "may", "which", "what", "how", "where", "when", "is", "does":
		// A question that asks before its colon: "Which do you prefer:
		// a lock or a sync.Map?"
	default:
		for k := first; k < len(a.toks) && k < first+7; k++ {
			if a.at(k) == ":" || a.at(k) == "—" {
				first = k + 1
				break
			}
		}
	}
	// "I can inline it or extract a helper — which would you like?":
	// the question is the last clause.
	for k := len(a.toks) - 2; k > first; k-- {
		if w := a.at(k); (w == "—" || w == ";") && a.isWord(k+1) {
			switch a.at(k + 1) {
			case "would", "could", "can", "will", "do", "did", "are", "shall", "should", "which", "what", "how", "where", "when", "any", "is", "does":
				first = k + 1
			}
			break
		}
	}
	w0, w1 := a.at(first), a.at(first+1)
	switch w0 {
	case "would", "could", "can", "will", "do", "did", "are", "shall", "should", "may", "want", "is", "does", "which", "what", "how", "where", "when", "why", "any":
	default:
		return false
	}
	addressed := false
	for _, t := range a.toks {
		switch t.w {
		case "you", "your", "you'd", "you're", "i", "me", "i'd", "we", "us":
			addressed = true
		}
	}
	if w0 == "want" && w1 == "me" || w0 == "is" && (w1 == "it" || w1 == "that") && (a.at(first+2) == "ok" || a.at(first+2) == "okay" || a.at(first+2) == "fine" || a.at(first+2) == "alright") || w0 == "any" && (w1 == "preference" || w1 == "preferences" || w1 == "thoughts") {
		addressed = true
	}
	if addressed && w0 != "why" && w0 != "how" && w0 != "what" && w0 != "where" || w0 == "should" || w0 == "shall" {
		return true
	}
	// Not addressed: open only when nothing but questions follow.
	for _, n := range ss[si+1:] {
		if !endsWithQuestion(a.text[n.s:n.e]) {
			return false
		}
	}
	return true
}

// neverOfThing reads a rule about a thing at "never" (token i): a
// passive ("tokens are never written to logs", "originals are never
// modified") or a movement ("emails never go into logs"), with a
// subject that is not a person or "it".
func (a *analysis) neverOfThing(i int) bool {
	if a.hedgedModal(i) {
		return false
	}
	p, v := a.at(i-1), a.at(i+1)
	switch p {
	case "is", "are", "get", "gets", "be":
		subj := a.at(i - 2)
		return participle(v) && subj != "" && !personal(subj) && subj != "it" && subj != "this" && subj != "that" && subj != "i" && subj != "you" && subj != "there"
	}
	switch v {
	case "go", "goes", "leave", "leaves", "reach", "reaches", "appear", "appears":
		return a.isWord(i-1) && !personal(p) && p != "it" && p != "this" && p != "that" && p != "i" && p != "you" && p != "they" && p != "he" && p != "she"
	}
	return false
}

// noRuleStops may follow a clause-opening "no" that states no rule: "no
// need to …", "no worries", "no changes needed".
var noRuleStops = map[string]bool{
	"need": true, "worries": true, "worry": true, "problem": true, "problems": true, "idea": true, "thanks": true,
	"luck": true, "rush": true, "way": true, "longer": true, "more": true, "matter": true, "issue": true,
	"issues": true, "one": true, "doubt": true, "clue": true, "change": true, "reason": true, "big": true,
	"hurry": true, "pressure": true, "longer,": true, "errors": true, "response": true, "output": true,
	"results": true, "result": true, "tests": true, "test": true, "it": true, "that": true, "this": true,
}

// noRule reads a user's prohibition opened by "no" at a clause's start
// and bounded by where it holds: "No floating point anywhere in the
// money path", "no client components under app/checkout", "no slug
// changes, ever".
func (a *analysis) noRule(i int) bool {
	if !(i == 0 || a.at(i-1) == "," || a.at(i-1) == "so" && a.at(i-2) == "," || a.clauseStart(i)) || a.question {
		return false
	}
	if !a.isWord(i+1) || noRuleStops[a.at(i+1)] || !a.isWord(i+2) && a.at(i+2) != "<" {
		return false
	}
	for j := i + 2; j < len(a.toks); j++ {
		switch a.at(j) {
		case "anywhere", "ever", "allowed", "permitted", "outside":
			return true
		case "under":
			return a.isWord(j+1) || a.toks[j+1].kind == tCode
		case "needed", "required", "found", "left", "yet", "so":
			return false
		}
	}
	return false
}

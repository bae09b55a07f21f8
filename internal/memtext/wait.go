package memtext

import (
	"strings"
)

// TypeWait is a condition the user holds something back for: "until
// finance signs off" in "Keep the old jobs running until finance signs
// off, don't delete them yet". It is open work until a later message
// says the condition happened (WaitMet).
const TypeWait Type = "wait"

// holdVerbs open a request that holds something back until a condition.
var holdVerbs = map[string]bool{
	"keep": true, "leave": true, "hold": true, "wait": true, "don't": true, "do": true, "stay": true, "park": true,
	"pause": true, "freeze": true,
}

// hold reads a user's request held back until a condition: an
// imperative of holding ("keep", "leave", "hold", "wait", "don't …")
// whose sentence has "until <subject> <verb> …". It returns the
// condition ("finance signs off") and whether the sentence also forbids
// something for now ("don't delete them yet").
func (a *analysis) hold() (cond string, forbids, ok bool) {
	if a.role != "user" || a.delegated || a.question || len(a.toks) < 4 {
		return "", false, false
	}
	first := 0
	for first < len(a.toks) && clauseStartFillers[a.at(first)] {
		first++
	}
	if !holdVerbs[a.at(first)] {
		return "", false, false
	}
	u := -1
	for j := first + 1; j+2 < len(a.toks); j++ {
		if a.at(j) == "until" {
			u = j
			break
		}
	}
	if u < 0 {
		return "", false, false
	}
	end := u + 1
	for end < len(a.toks) && a.toks[end].kind != tPunct {
		end++
	}
	ws := wordsOf(a.toks[u+1 : end])
	if len(ws) < 2 || len(ws) > 8 || waitVerb(ws) < 0 {
		return "", false, false
	}
	for j := 0; j < len(a.toks); j++ {
		if w := a.at(j); w == "don't" || w == "do" && a.at(j+1) == "not" || w == "never" {
			forbids = true
		}
	}
	return strings.TrimSpace(a.text[a.toks[u+1].s:a.toks[end-1].e]), forbids, true
}

// waitVerb returns the index in ws of a condition's verb: the first word
// after its subject in the present third person ("signs", "approves",
// "lands", "is"), or -1.
func waitVerb(ws []string) int {
	for i := 1; i < len(ws); i++ {
		w := ws[i]
		if w == "is" || w == "are" || w == "has" || w == "have" {
			return i
		}
		if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3 && !stopWords[w] {
			return i
		}
	}
	return -1
}

// pastOf returns the past tense of a present third-person verb:
// "signs" signed, "approves" approved, "ships" shipped, "is" was.
func pastOf(w string) []string {
	switch w {
	case "is":
		return []string{"was", "is"}
	case "are":
		return []string{"were", "are"}
	case "has", "have":
		return []string{"has", "have", "had"}
	}
	base := strings.TrimSuffix(w, "s")
	if strings.HasSuffix(w, "ies") {
		base = strings.TrimSuffix(w, "ies") + "y"
	} else if strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "xes") {
		base = strings.TrimSuffix(w, "es")
	}
	return pastForms(base)
}

// WaitMet reports whether text says the condition cond ("finance signs
// off") happened; see Report.Met.
func WaitMet(cond, text string) bool { return ReadReport(text).Met(cond) }

// Met reports whether r says the condition cond happened: a sentence
// names every word of the condition's subject and has its verb in the
// past ("Finance signed off on the numbers yesterday").
func (r *Report) Met(cond string) bool {
	cw := words(cond)
	v := waitVerb(cw)
	if v < 0 {
		return false
	}
	subject := Terms(strings.Join(cw[:v], " "))
	return len(subject) > 0 && r.said(pastOf(cw[v]), subject, len(subject))
}

// GoAhead reports whether text, the user's, gives the go-ahead for
// something held back: "You can retire the old DAG now", "go ahead and
// delete the flag".
func GoAhead(text string) bool {
	low := lowerASCII(text)
	var toks []tok
	for _, sn := range sentences(nil, text) {
		toks = tokenize(toks[:0], text, low, sn.s, sn.e)
		a := analysis{text: text, toks: toks, sn: sn, role: "user"}
		a.question = endsWithQuestion(text[sn.s:sn.e])
		if _, ok := a.permission(); ok && !a.question {
			return true
		}
	}
	return false
}

// Decides reports whether text, the user's, states a decision.
func Decides(text string) bool {
	for _, f := range Find(text, FindOptions{Role: "user"}) {
		if f.Type == TypeDecision {
			return true
		}
	}
	return false
}

package webui

import (
	"fmt"
	"html/template"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// searchPage is the search template's data.
type searchPage struct {
	Title string
	Nav   string
	Live  bool
	Frag  string
	// The form: the request's fields, as `bbengine mem search` takes
	// them.
	Q, Session, Task, Project string
	AllProjects, Forgotten    bool
	Types                     []typeBox
	K                         int
	Results                   []resultView
	Took                      string
	Err                       string
	Asked                     bool
}

// typeBox is one artifact type's checkbox of the search form.
type typeBox struct {
	Name    string
	Checked bool
}

// resultView is one search result, its title and snippet with the
// query's words marked.
type resultView struct {
	Card         cardView
	N            int
	TitleHTML    template.HTML
	SnippetHTML  template.HTML
	OtherHeading string // the line before the first result of other projects
}

// serveSearch answers the search page: Service.Find with the request
// `bbengine mem search` makes from the same flags (q, session, task,
// project, all-projects, type, k, all), less the current directory,
// which a browser has none of.
func (u *UI) serveSearch(w http.ResponseWriter, r *http.Request) {
	qv := r.URL.Query()
	p := &searchPage{Title: "search", Nav: "search", Q: strings.TrimSpace(qv.Get("q")), Session: strings.TrimSpace(qv.Get("session")),
		Task: strings.TrimSpace(qv.Get("task")), Project: strings.TrimSpace(qv.Get("project")),
		AllProjects: qv.Get("all-projects") != "", Forgotten: qv.Get("all") != "", K: 10}
	if k, err := strconv.Atoi(qv.Get("k")); err == nil {
		p.K = k
	}
	types := map[string]bool{}
	for _, t := range qv["type"] {
		types[t] = true
	}
	req := api.SearchRequest{Text: p.Q, Session: p.Session, Task: p.Task, K: p.K, IncludeForgotten: p.Forgotten, AllProjects: p.AllProjects}
	for _, t := range engine.ArtifactTypes {
		p.Types = append(p.Types, typeBox{Name: string(t), Checked: types[string(t)]})
		if types[string(t)] {
			req.Types = append(req.Types, t)
		}
	}
	if p.Project != "" {
		req.Project = filepath.Clean(p.Project)
	}
	if p.Q == "" {
		u.render(w, http.StatusOK, "search", p)
		return
	}
	p.Asked, p.Title = true, "search: "+p.Q
	if p.K < 1 || p.K > 100 {
		p.Err = fmt.Sprintf("k %d: want 1 to 100", p.K)
		u.render(w, http.StatusBadRequest, "search", p)
		return
	}
	for t := range types {
		if !engine.ArtifactType(t).Valid() {
			p.Err = fmt.Sprintf("type %q: want decision, constraint, outcome, open_thread or transcript", t)
			u.render(w, http.StatusBadRequest, "search", p)
			return
		}
	}
	start := time.Now()
	rs, err := u.svc.Find(req)
	if err != nil {
		p.Err = err.Error()
		u.render(w, statusOf(err), "search", p)
		return
	}
	p.Took = time.Since(start).Round(time.Microsecond).String()
	words := queryWords(p.Q)
	for i := range rs {
		v := resultView{Card: cardOf(&rs[i].Card), N: i + 1}
		v.Card.Other, v.Card.Project = rs[i].Other, rs[i].Project
		v.TitleHTML = mark(v.Card.Title, words)
		v.SnippetHTML = mark(v.Card.Snippet, words)
		if rs[i].Other && (i == 0 || !rs[i-1].Other) {
			v.OtherHeading = "other projects:"
			if i == 0 {
				v.OtherHeading = "nothing in this project matches; from other projects:"
			}
		}
		p.Results = append(p.Results, v)
	}
	u.render(w, http.StatusOK, "search", p)
}

// isWord reports whether r is part of a word: a letter, a digit or '_'.
func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// queryWords returns the words of a query, lower case.
func queryWords(q string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(q, func(r rune) bool { return !isWord(r) }) {
		out[strings.ToLower(w)] = true
	}
	return out
}

// mark returns s HTML-escaped, each whole word of it that is one of
// words (case-insensitively) inside <mark>. Every piece of s is escaped
// on its own: the only markup is the <mark> tags mark writes.
func mark(s string, words map[string]bool) template.HTML {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexFunc(s, isWord)
		if i < 0 {
			i = len(s)
		}
		b.WriteString(template.HTMLEscapeString(s[:i]))
		s = s[i:]
		j := strings.IndexFunc(s, func(r rune) bool { return !isWord(r) })
		if j < 0 {
			j = len(s)
		}
		w := template.HTMLEscapeString(s[:j])
		if j > 0 && words[strings.ToLower(s[:j])] {
			w = "<mark>" + w + "</mark>"
		}
		b.WriteString(w)
		s = s[j:]
	}
	return template.HTML(b.String())
}

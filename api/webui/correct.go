package webui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/api"
)

// correctPath is where the memory pages' forms post a correction.
const correctPath = Prefix + "correct"

// correctOps are the corrections a form may ask for.
var correctOps = map[string]bool{"forget": true, "unforget": true, "pin": true, "unpin": true}

// correctView is the data of one correction form: the artifact it is
// about, its state (which buttons it shows) and the page to come back to.
type correctView struct {
	CSRF, ID, Back    string
	Forgotten, Pinned bool
}

// correctFor returns the correction form of card v on the page back, or
// nil when the UI cannot write (a snapshot: `bbengine ui` without a
// proxy holds the directory read-only).
func (u *UI) correctFor(v *cardView, back string) *correctView {
	if u.snapshot {
		return nil
	}
	return &correctView{CSRF: u.csrf, ID: v.ID, Back: back, Forgotten: v.Forgotten, Pinned: v.Pinned}
}

// serveCorrect answers a correction form's POST (ServeHTTP checked its
// Origin and CSRF token): forget, unforget, pin or unpin an artifact,
// written to the WAL by Service.Correct exactly as `bbengine mem forget`
// and the others do, then back to the form's page (303), which shows the
// artifact's new state: Correct returns once memory and the index have
// taken the correction.
func (u *UI) serveCorrect(w http.ResponseWriter, r *http.Request) {
	if u.snapshot {
		u.refuse(w, http.StatusConflict, "bbengine ui: this UI serves a read-only snapshot (no proxy runs for the directory): run `bbengine mem "+
			cleanOp(r.PostFormValue("op"))+" ID`, or start `bbengine proxy` and open `bbengine ui` again")
		return
	}
	op, id := r.PostFormValue("op"), strings.TrimSpace(r.PostFormValue("id"))
	if !correctOps[op] {
		u.refuse(w, http.StatusBadRequest, "bbengine ui: a correction is forget, unforget, pin or unpin, not "+strconv.Quote(clip(op, 40)))
		return
	}
	if id == "" {
		u.refuse(w, http.StatusBadRequest, "bbengine ui: a correction names an artifact: the form sent no id")
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if _, err := u.svc.Correct(api.Correction{Op: op, Target: "artifact", ID: id, Reason: reason}); err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: "+op+" "+id+": "+err.Error())
		return
	}
	http.Redirect(w, r, backTo(r.PostFormValue("back"), artifactURL(id)), http.StatusSeeOther)
}

// backTo returns back when it is a path of the UI's own, else def: a form
// sends the page it is on, and a redirect never leaves the UI.
func backTo(back, def string) string {
	b, err := url.Parse(back)
	if err != nil || back == "" || b.Scheme != "" || b.Host != "" || b.User != nil || b.Opaque != "" ||
		strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") || !strings.HasPrefix(b.Path, Prefix) ||
		strings.Contains(b.Path, "/../") || strings.HasSuffix(b.Path, "/..") {
		return def
	}
	return back
}

// cleanOp is op when it is a correction's, else a placeholder, for a
// message that quotes a command.
func cleanOp(op string) string {
	if correctOps[op] {
		return op
	}
	return "forget|unforget|pin|unpin"
}

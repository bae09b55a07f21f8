package webui

import (
	"fmt"
	"net/http"
	"time"
)

// heartbeat is how often an idle live stream sends a comment, so that a
// dead connection is noticed.
const heartbeat = 15 * time.Second

// serveLive streams server-sent events: "change" with the new version
// each time Version moves, until the client goes, or Close.
func (u *UI) serveLive(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		u.refuse(w, http.StatusInternalServerError, "bbengine ui: this server cannot stream")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	last, err := u.version()
	fmt.Fprintf(w, "retry: 2000\nevent: hello\ndata: %d\n\n", last)
	fl.Flush()
	tick := time.NewTicker(u.every)
	defer tick.Stop()
	idle := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-u.done:
			return
		case <-tick.C:
		}
		v, verr := u.version()
		switch {
		case verr == nil && (v != last || err != nil):
			last, err = v, nil
			fmt.Fprintf(w, "event: change\ndata: %d\n\n", v)
		case time.Since(idle) >= heartbeat:
			fmt.Fprint(w, ": idle\n\n")
		default:
			continue
		}
		idle = time.Now()
		fl.Flush()
	}
}

package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// TestWholeText: tool results longer than the timeline shows link their
// whole text, byte for byte: one the engine keeps in the event (300 KiB)
// and one it keeps in the blob store (1.5 MiB, past its 1 MiB TextLimit).
func TestWholeText(t *testing.T) {
	r := newRig(t)
	texts := map[string]string{}
	for _, n := range []int{300 << 10, 1536 << 10} {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %d of the build log: ok  \tgithub.com/acme/pkg%d\t0.%03ds <&>\n", i, i%97, i%1000)
		}
		session := fmt.Sprintf("sess-long-%d", n>>10)
		texts[session] = b.String()
		result, _ := json.Marshal(b.String())
		r.send(t, session, `[{"role":"user","content":"build it"},`+
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"make"}}]},`+
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":`+string(result)+`}]}]`, "")
	}
	r.serve(t)
	c := r.client(t)
	for session, want := range texts {
		evs, err := r.svc.Events(session, engine.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var res *engine.Event
		for i := range evs {
			if evs[i].Kind == engine.KindToolResult {
				res = &evs[i]
			}
		}
		if res == nil {
			t.Fatalf("%s: no tool result", session)
		}
		if big := len(want) > 1<<20; big != (res.TextBlob != "") {
			t.Fatalf("%s: a text of %d bytes has the blob %q", session, len(want), res.TextBlob)
		}
		code, page := get(t, c, r.srv.URL+Prefix+"s/"+session)
		if code != 200 {
			t.Fatalf("%s: timeline %d", session, code)
		}
		m := regexp.MustCompile(`<a class="whole" href="([^"]+)">`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: the timeline links no whole text", session)
		}
		if got, want := html.UnescapeString(m[1]), textURL(session, res.Seq); got != want {
			t.Errorf("%s: whole text link %q, want %q", session, got, want)
		}
		resp, err := c.Get(r.srv.URL + html.UnescapeString(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: whole text %d, %q, nosniff %q", session, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"))
		}
		if body.String() != want {
			t.Errorf("%s: the whole text is %d bytes, want the %d sent", session, body.Len(), len(want))
		}
	}

	for q, want := range map[string]int{"": 400, "s=sess-long-300": 400, "s=sess-long-300&e=x": 400, "s=sess-long-300&e=0": 400,
		"s=sess-long-300&e=999": 404, "s=nope&e=1": 404} {
		if code, body := get(t, c, r.srv.URL+Prefix+"text?"+q); code != want {
			t.Errorf("text?%s: %d, want %d\n%s", q, code, want, body)
		}
	}
	for _, sum := range []string{"", "../../api.token", strings.Repeat("A", 64), strings.Repeat("0", 63)} {
		if _, err := r.svc.Blob(sum); !errors.Is(err, api.ErrBadQuery) {
			t.Errorf("Blob(%q): %v, want a bad query", sum, err)
		}
	}
	if _, err := r.svc.Blob(strings.Repeat("0", 64)); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("Blob of no blob: %v, want not found", err)
	}
}

package derive

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
)

// The merge of two timelines of one session, as pure functions of them
// (merge.go stores what they give). Events pair by exact keys or exact
// content, never by text similarity or time: a model call by its
// response id, the provider's request id, a tool call id or a thinking
// signature, else by its reply (the same texts and tool calls, in its
// thread's place: pairContent); a tool result by its call's id; the user
// messages of a request by the boundary rule (the import's texts,
// joined, equal the live ones or end them after a newline). The live
// timeline is the backbone of the merged order (docs/design/merge.md,
// 2.3 to 2.6).

// The tags of an OrderEntry.
const (
	OrderLive      = 'L' // a live event without a partner
	OrderImport    = 'I' // an imported event without a partner
	OrderPair      = 'P' // a live and an imported event, one fact
	OrderRemainder = 'W' // the live text before the boundary of a split user message
)

// OrderEntry is one event of a merged view: which side's event, or
// which two, it is made of (seqs of each side's own timeline; 0 for
// none).
type OrderEntry struct {
	Tag  byte
	Live uint64
	Imp  uint64
}

// AppendOrder appends the binary form of order to dst: per entry its tag
// byte and the two seqs as uvarints.
func AppendOrder(dst []byte, order []OrderEntry) []byte {
	for _, o := range order {
		dst = append(dst, o.Tag)
		dst = binary.AppendUvarint(dst, o.Live)
		dst = binary.AppendUvarint(dst, o.Imp)
	}
	return dst
}

// DecodeOrder decodes what AppendOrder wrote.
func DecodeOrder(b []byte) ([]OrderEntry, error) {
	var out []OrderEntry
	for off := 0; off < len(b); {
		o := OrderEntry{Tag: b[off]}
		switch o.Tag {
		case OrderLive, OrderImport, OrderPair, OrderRemainder:
		default:
			return nil, fmt.Errorf("merge order: unknown tag %q at byte %d", o.Tag, off)
		}
		off++
		var n int
		if o.Live, n = binary.Uvarint(b[off:]); n <= 0 {
			return nil, fmt.Errorf("merge order: bad seq at byte %d", off)
		}
		off += n
		if o.Imp, n = binary.Uvarint(b[off:]); n <= 0 {
			return nil, fmt.Errorf("merge order: bad seq at byte %d", off)
		}
		off += n
		out = append(out, o)
	}
	return out, nil
}

// group is a response group of one side: a model call and its output.
type group struct {
	call   int   // index of the model_call
	events []int // indices of its events, the model call first
	thread int
	keys   []string
}

// responseKind reports whether an imported event belongs to the
// response group open in its thread: the output of a model call and
// its usage.
func responseKind(ev *Event) bool {
	switch ev.Kind {
	case KindThinking, KindToolCall, KindUsage, KindError, KindInterruption:
		return true
	case KindMessage:
		return ev.Role == "assistant"
	}
	return false
}

// groupKeys returns the exact keys of an event (this file's comment),
// prefixed by their kind. The provider's request id is Call.UpstreamID
// on the live side, Prov.RequestID on the imported one (Claude Code's
// requestId).
func groupKeys(ev *Event, live bool) []string {
	var out []string
	switch ev.Kind {
	case KindModelCall:
		if ev.Call != nil && ev.Call.ResponseID != "" {
			out = append(out, "resp:"+ev.Call.ResponseID)
		}
		up := ev.Prov.RequestID
		if live {
			up = ""
			if ev.Call != nil {
				up = ev.Call.UpstreamID
			}
		}
		if up != "" {
			out = append(out, "up:"+up)
		}
	case KindToolCall:
		if ev.Tool != nil && ev.Tool.ID != "" && !ev.Tool.SyntheticID {
			out = append(out, "call:"+ev.Tool.ID)
		}
	case KindThinking:
		if s := cmp.Or(ev.Signature, ev.Data); s != "" {
			sum := sha256.Sum256([]byte(s))
			out = append(out, "sig:"+hex.EncodeToString(sum[:]))
		}
	}
	return out
}

// liveGroups returns the response groups of a live timeline: per
// exchange, its model call and the response-side events after it.
func liveGroups(live []Event) []group {
	var out []group
	at := map[uint64]int{}
	for i := range live {
		ev := &live[i]
		if ev.Prov.Side != "response" || ev.Prov.Exchange == 0 {
			continue
		}
		g, ok := at[ev.Prov.Exchange]
		if !ok {
			if ev.Kind != KindModelCall {
				continue
			}
			at[ev.Prov.Exchange] = len(out)
			out = append(out, group{call: i, thread: ev.Thread})
			g = len(out) - 1
		}
		out[g].events = append(out[g].events, i)
		out[g].keys = append(out[g].keys, groupKeys(ev, true)...)
	}
	return out
}

// importGroups returns the response groups of an imported timeline: a
// model call and what follows it in its thread up to its usage, records
// stepped over. A usage that comes after something else of the thread
// (Codex 0.169 writes a response's token_count after the output of its
// tool call) still ends the thread's last group when that one has none
// and no model call came between.
func importGroups(imp []Event) []group {
	var out []group
	open := map[int]int{}  // thread → open group
	owing := map[int]int{} // thread → its last group, closed without a usage
	for i := range imp {
		ev := &imp[i]
		if ev.Kind == KindModelCall {
			open[ev.Thread] = len(out)
			delete(owing, ev.Thread)
			out = append(out, group{call: i, events: []int{i}, thread: ev.Thread, keys: groupKeys(ev, false)})
			continue
		}
		if ev.Kind == KindRecord {
			// A record of the log's own (opencode's step-start) is
			// neither the reply nor what ends it.
			continue
		}
		g, ok := open[ev.Thread]
		if !ok {
			if g, ok := owing[ev.Thread]; ok && ev.Kind == KindUsage {
				out[g].events = append(out[g].events, i)
				delete(owing, ev.Thread)
			}
			continue
		}
		if !responseKind(ev) {
			delete(open, ev.Thread)
			owing[ev.Thread] = g
			continue
		}
		out[g].events = append(out[g].events, i)
		out[g].keys = append(out[g].keys, groupKeys(ev, false)...)
		if ev.Kind == KindUsage {
			delete(open, ev.Thread)
		}
	}
	return out
}

// pairing is what MergeOrder found: partners by index.
type pairing struct {
	liveTo map[int][]int // live index → imported indices
	impTo  map[int]int   // imported index → live index
	// remainder marks a live user message whose text before the
	// boundary is a wire remainder.
	remainder map[int]bool
	// toolIDs maps the id of a paired live tool call to its partner's,
	// for results of calls the sides name differently.
	toolIDs map[string]string
	st      Merged
}

func (p *pairing) pair(l, i int) {
	p.liveTo[l] = append(p.liveTo[l], i)
	p.impTo[i] = l
	p.st.Paired++
}

// MergeOrder pairs the events of a live and an imported timeline of one
// session and returns the merged order, and the counts of Merged (less
// Members). It is a pure function of the two timelines.
func MergeOrder(live, imp []Event) ([]OrderEntry, Merged) {
	p, _, _, _ := pairAll(live, imp)
	order := mergedOrder(live, imp, p)
	for _, o := range order {
		switch o.Tag {
		case OrderLive:
			p.st.LiveOnly++
		case OrderImport:
			p.st.LogOnly++
		}
	}
	return order, p.st
}

// pairAll pairs the events of two timelines of one session (MergeOrder)
// and returns the pairing, the response groups of each side and which of
// them pair, in live order.
func pairAll(live, imp []Event) (*pairing, []group, []group, []groupPair) {
	p := &pairing{liveTo: map[int][]int{}, impTo: map[int]int{}, remainder: map[int]bool{}, toolIDs: map[string]string{}}
	lg, ig := liveGroups(live), importGroups(imp)

	// Exact keys: a key two imported groups share is ignored.
	byKey := map[string]int{}
	for gi := range ig {
		for _, k := range ig[gi].keys {
			if j, ok := byKey[k]; ok && j != gi {
				if j >= 0 {
					p.st.Ambiguous++
				}
				byKey[k] = -1
				continue
			}
			byKey[k] = gi
		}
	}
	// Live groups in live order; each pairs with the one imported group
	// its keys name, when that one is not paired yet.
	taken := map[int]bool{}
	var pairs []groupPair
	for li := range lg {
		cand, ok := -1, true
		for _, k := range lg[li].keys {
			j, found := byKey[k]
			if !found || j < 0 {
				continue
			}
			if cand >= 0 && cand != j {
				ok = false
			}
			cand = j
		}
		if !ok || cand < 0 || taken[cand] {
			continue
		}
		taken[cand] = true
		pairs = append(pairs, groupPair{l: li, i: cand})
		p.pairGroups(live, imp, &lg[li], &ig[cand])
	}
	for _, gp := range pairContent(live, imp, lg, ig, byKey, taken, pairs) {
		pairs = append(pairs, gp)
		p.pairGroups(live, imp, &lg[gp.l], &ig[gp.i])
	}
	slices.SortFunc(pairs, func(a, b groupPair) int { return cmp.Compare(a.l, b.l) })

	// The request side of each paired exchange meets the imported
	// events of its thread between the previous pair and this one.
	reqs := map[uint64][]int{}
	for i := range live {
		if live[i].Prov.Side == "request" {
			reqs[live[i].Prov.Exchange] = append(reqs[live[i].Prov.Exchange], i)
		}
	}
	prev := map[int]int{} // imported thread → index of its last paired model call
	for _, gp := range pairs {
		g := &ig[gp.i]
		from, seen := prev[g.thread]
		if !seen {
			from = -1
		}
		prev[g.thread] = max(from, g.call)
		if g.call < from {
			continue
		}
		var stretch []int
		for k := from + 1; k < g.call; k++ {
			if _, paired := p.impTo[k]; !paired && imp[k].Thread == g.thread {
				stretch = append(stretch, k)
			}
		}
		p.pairRequest(live, imp, reqs[live[lg[gp.l].call].Prov.Exchange], stretch)
	}

	p.pairLeftovers(live, imp)
	return p, lg, ig, pairs
}

// groupPair is a live response group and the imported one it pairs
// with, by their indices in liveGroups and importGroups; content is set
// for a pair made by content (pairContent), not by an exact key.
type groupPair struct {
	l, i    int
	content bool
}

// pairContent pairs the live groups that no exact key names with
// imported groups of the same reply (docs/design/merge.md, 2.3,
// "Content"): Codex keeps no response id in its rollout, so a text-only
// answer has no exact key, and Gemini CLI's log and wire name a tool
// call differently. A live thread maps to the imported thread of its
// first pair. A live group after a pair of its thread is compared with
// the next unpaired imported group of the mapped thread after that
// pair's partner; one before the first pair of its thread, with the
// last unpaired one before the next pair's partner. The first group of a
// thread with no pair pairs with the first unpaired imported group of
// equal reply and equal usage: the prompt's token count grows with the
// conversation, so it pins the place. Only equal reply keys pair; a
// group whose reply has no key (thinking alone, a text in a blob on one
// side only) stays apart. It returns the new pairs; taken gains their
// imported groups.
func pairContent(live, imp []Event, lg, ig []group, byKey map[string]int, taken map[int]bool, exact []groupPair) []groupPair {
	partner := make([]int, len(lg)) // live group → imported group, -1
	for i := range partner {
		partner[i] = -1
	}
	for _, gp := range exact {
		partner[gp.l] = gp.i
	}
	// A live group some exact key names a group for is not content's:
	// the key was ambiguous, or its group taken by another.
	eligible := func(li int) bool {
		if partner[li] >= 0 {
			return false
		}
		for _, k := range lg[li].keys {
			if _, found := byKey[k]; found {
				return false
			}
		}
		return true
	}
	replies := map[*group]string{}
	reply := func(side []Event, g *group) string {
		if k, ok := replies[g]; ok {
			return k
		}
		k := replyKey(side, g)
		replies[g] = k
		return k
	}
	same := func(li, gi int) bool {
		k := reply(live, &lg[li])
		return k != "" && !taken[gi] && k == reply(imp, &ig[gi])
	}
	threads := map[int]int{} // live thread → imported thread
	for li := range lg {
		if gi := partner[li]; gi >= 0 {
			if _, ok := threads[lg[li].thread]; !ok {
				threads[lg[li].thread] = ig[gi].thread
			}
		}
	}
	var out []groupPair
	add := func(li, gi int) {
		partner[li] = gi
		taken[gi] = true
		out = append(out, groupPair{l: li, i: gi, content: true})
		if _, ok := threads[lg[li].thread]; !ok {
			threads[lg[li].thread] = ig[gi].thread
		}
	}
	// next is the first paired live group of li's thread after it, -1.
	next := func(li int) int {
		for n := li + 1; n < len(lg); n++ {
			if lg[n].thread == lg[li].thread && partner[n] >= 0 {
				return n
			}
		}
		return -1
	}
	// Forward: after a pair of the thread, or the thread's first group.
	last := map[int]int{} // live thread → its last paired live group so far
	for li := range lg {
		t := lg[li].thread
		if partner[li] >= 0 {
			last[t] = li
			continue
		}
		if !eligible(li) {
			continue
		}
		if pl, ok := last[t]; ok {
			limit := len(ig)
			if n := next(li); n >= 0 {
				limit = partner[n]
			}
			u := threads[t]
			for gi := partner[pl] + 1; gi < limit; gi++ {
				if ig[gi].thread != u || taken[gi] {
					continue
				}
				if same(li, gi) {
					add(li, gi)
					last[t] = li
				}
				break
			}
			continue
		}
		if _, mapped := threads[t]; mapped {
			continue // before the thread's first pair: backward, below
		}
		want := groupUsage(live, &lg[li])
		for gi := range ig {
			if same(li, gi) && want != nil && equalUsage(want, groupUsage(imp, &ig[gi])) {
				add(li, gi)
				last[t] = li
				break
			}
		}
	}
	// Backward: before the first pair of the thread, from the last. A
	// group after a pair of its thread had its chance forwards: going
	// back from the next pair it could pass the previous one.
	first := map[int]int{} // live thread → its first paired live group
	for li := len(lg) - 1; li >= 0; li-- {
		if partner[li] >= 0 {
			first[lg[li].thread] = li
		}
	}
	for li := len(lg) - 1; li >= 0; li-- {
		if f, ok := first[lg[li].thread]; !eligible(li) || !ok || f < li {
			continue
		}
		n := next(li)
		if n < 0 {
			continue
		}
		u := threads[lg[li].thread]
		for gi := partner[n] - 1; gi >= 0; gi-- {
			if ig[gi].thread != u || taken[gi] {
				continue
			}
			if same(li, gi) {
				add(li, gi)
			}
			break
		}
	}
	return out
}

// replyKey is the content of a response group's reply: its assistant
// texts and its tool calls by name and canonical arguments, without ids,
// in order. A short text counts trimmed, runs of white space as one
// space; a text of longTextKey bytes or more by its SHA-256, the digest a
// text in a blob is named by (a live text over Options.TextLimit is in a
// blob, the log's is whole). Thinking is left out (a log may omit it).
// It is "" for a reply with none of these.
func replyKey(side []Event, g *group) string {
	h := sha256.New()
	n := 0
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	for _, k := range g.events {
		ev := &side[k]
		switch {
		case ev.Kind == KindMessage && ev.Role == "assistant":
			w("m")
			switch {
			case ev.TextBlob != "":
				w("blob:" + ev.TextBlob)
			case len(ev.Text) >= longTextKey:
				sum := sha256.Sum256([]byte(ev.Text))
				w("blob:" + hex.EncodeToString(sum[:]))
			default:
				w(strings.Join(strings.Fields(ev.Text), " "))
			}
		case ev.Kind == KindToolCall && ev.Tool != nil:
			w("t")
			w(ev.Tool.Name)
			w(string(llm.CanonicalJSON(ev.Tool.Args)))
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return ""
	}
	return string(h.Sum(nil))
}

// sameText reports whether two texts are equal but for runs of white
// space and white space at their ends.
func sameText(a, b string) bool {
	if strings.TrimSpace(a) == strings.TrimSpace(b) {
		return true
	}
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// sameMessage reports whether two messages have the same text: equal
// but for white space (sameText), or, when one is in a blob, the same
// bytes by the blob's digest.
func sameMessage(a, b *Event) bool {
	switch {
	case a.TextBlob == "" && b.TextBlob == "":
		return sameText(a.Text, b.Text)
	case a.TextBlob != "" && b.TextBlob != "":
		return a.TextBlob == b.TextBlob
	case a.TextBlob != "":
		a, b = b, a
	}
	sum := sha256.Sum256([]byte(a.Text))
	return hex.EncodeToString(sum[:]) == b.TextBlob
}

// sameCall reports whether two tool calls have the same name and
// canonical arguments.
func sameCall(a, b *Tool) bool {
	return a != nil && b != nil && a.Name == b.Name && string(llm.CanonicalJSON(a.Args)) == string(llm.CanonicalJSON(b.Args))
}

// longTextKey is the length from which replyKey takes a text by its
// digest; below it Options.TextLimit, which puts a text in a blob, is
// taken to be never set.
const longTextKey = 1024

// groupUsage is the usage of a response group, nil for none.
func groupUsage(side []Event, g *group) *Usage {
	for _, k := range g.events {
		if side[k].Kind == KindUsage && side[k].Usage != nil {
			return side[k].Usage
		}
	}
	return nil
}

// equalUsage reports whether two usages agree on what both sides of a
// call report: input, output, cache reads and reasoning.
func equalUsage(a, b *Usage) bool {
	return b != nil && a.Input == b.Input && a.Output == b.Output && a.CacheRead == b.CacheRead && a.Reasoning == b.Reasoning
}

// pairGroups pairs the events of two response groups that are the same
// call: the model calls, the usages, tool calls by id, thinking and
// assistant messages by position (messages only when their trimmed
// texts are equal).
func (p *pairing) pairGroups(live, imp []Event, l, i *group) {
	used := map[int]bool{}
	nth := func(g *group, side []Event, kind Kind, n int) int {
		for _, k := range g.events {
			if side[k].Kind == kind && (kind != KindMessage || side[k].Role == "assistant") {
				if n == 0 {
					return k
				}
				n--
			}
		}
		return -1
	}
	count := map[Kind]int{}
	for _, a := range l.events {
		ev := &live[a]
		b := -1
		switch ev.Kind {
		case KindModelCall, KindUsage, KindThinking:
			b = nth(i, imp, ev.Kind, count[ev.Kind])
			count[ev.Kind]++
		case KindMessage:
			if ev.Role == "assistant" {
				b = nth(i, imp, KindMessage, count[KindMessage])
				count[KindMessage]++
				if b >= 0 && !sameMessage(ev, &imp[b]) {
					b = -1
				}
			}
		case KindToolCall:
			if ev.Tool != nil && !ev.Tool.SyntheticID {
				for _, k := range i.events {
					if imp[k].Kind == KindToolCall && imp[k].Tool != nil && imp[k].Tool.ID == ev.Tool.ID {
						b = k
						break
					}
				}
			}
			if b < 0 && ev.Tool != nil {
				// A call the two sides name differently (a synthetic
				// id, Gemini CLI's own): by position, name and
				// canonical arguments.
				if k := nth(i, imp, KindToolCall, count[KindToolCall]); k >= 0 && !used[k] && sameCall(ev.Tool, imp[k].Tool) {
					b = k
				}
			}
			count[KindToolCall]++
		}
		if b >= 0 && !used[b] {
			used[b] = true
			p.pair(a, b)
			if ev.Kind == KindToolCall && ev.Tool.ID != "" && imp[b].Tool.ID != "" {
				p.toolIDs[ev.Tool.ID] = imp[b].Tool.ID
			}
		} else {
			p.st.Unpaired++
		}
	}
	for _, k := range i.events {
		if !used[k] {
			p.st.Unpaired++
		}
	}
}

// pairRequest pairs the request events of a live exchange (reqs) with
// the unpaired imported events before its call (stretch): tool results
// by id, user messages by the boundary rule.
func (p *pairing) pairRequest(live, imp []Event, reqs, stretch []int) {
	var lu, iu, la []int
	free := func(b int) bool { _, done := p.impTo[b]; return !done }
	// index maps the first key of each event of the stretch to those
	// events, in stretch order: made once, at the first lookup, so that
	// a request re-sending a long history pairs in time linear in it.
	var index map[string][]int
	byKey := func(a int) {
		keys := groupKeys(&live[a], true)
		if t := live[a].Tool; live[a].Kind == KindToolResult && t != nil && t.ID != "" {
			if id, ok := p.toolIDs[t.ID]; ok {
				keys = []string{"result:" + id}
			} else if !t.SyntheticID {
				keys = []string{"result:" + t.ID}
			}
		}
		if len(keys) == 0 {
			return
		}
		if index == nil {
			index = map[string][]int{}
			for _, b := range stretch {
				k := groupKeys(&imp[b], true)
				if imp[b].Kind == KindToolResult && imp[b].Tool != nil {
					k = []string{"result:" + imp[b].Tool.ID}
				}
				if len(k) > 0 {
					index[k[0]] = append(index[k[0]], b)
				}
			}
		}
		for _, b := range index[keys[0]] {
			if free(b) && imp[b].Kind == live[a].Kind {
				p.pair(a, b)
				return
			}
		}
	}
	for _, a := range reqs {
		ev := &live[a]
		switch {
		case ev.Kind == KindToolResult, ev.Kind == KindToolCall, ev.Kind == KindThinking:
			// By id or signature; a request re-sends the calls and
			// thinking of earlier output when the proxy saw only the
			// later part of a session.
			byKey(a)
		case ev.Kind == KindMessage && ev.Role == "user":
			lu = append(lu, a)
		case ev.Kind == KindMessage && ev.Role == "assistant":
			la = append(la, a)
		}
	}
	// Assistant messages re-sent in a request, in order, when their
	// trimmed texts are equal.
	next := 0
	for _, a := range la {
		if live[a].TextBlob != "" {
			continue
		}
		for k := next; k < len(stretch); k++ {
			b := stretch[k]
			if free(b) && imp[b].Kind == KindMessage && imp[b].Role == "assistant" && imp[b].TextBlob == "" &&
				strings.TrimSpace(imp[b].Text) == strings.TrimSpace(live[a].Text) {
				p.pair(a, b)
				next = k + 1
				break
			}
		}
	}
	for _, b := range stretch {
		if _, done := p.impTo[b]; !done && imp[b].Kind == KindMessage && imp[b].Role == "user" {
			iu = append(iu, b)
		}
	}
	// The boundary rule, message by message in order: a live user
	// message pairs with the next run of the log's user messages whose
	// texts, joined with newlines, equal it or end it right after a
	// newline (the wire put context in front); log messages the wire
	// did not send are stepped over.
	pos := 0
	for _, a := range lu {
		lt := live[a].Text
		if live[a].TextBlob != "" {
			continue // a text in a blob: not compared here
		}
	search:
		for start := pos; start < len(iu); start++ {
			var it string
			for end := start + 1; end <= len(iu); end++ {
				m := &imp[iu[end-1]]
				if m.TextBlob != "" {
					break
				}
				if end > start+1 {
					it += "\n"
				}
				it += m.Text
				if len(it) > len(lt) {
					break
				}
				if it != "" && (lt == it || strings.HasSuffix(lt, "\n"+it)) {
					for _, b := range iu[start:end] {
						p.pair(a, b)
					}
					if lt != it && strings.TrimSpace(lt[:len(lt)-len(it)-1]) != "" {
						p.remainder[a] = true
					}
					pos = end
					break search
				}
			}
		}
	}
}

// leftoverKey is the exact key of a request-side event left unpaired: a
// tool result by its call's id, a re-sent tool call by its id, re-sent
// thinking by its signature.
func leftoverKey(ev *Event) string {
	switch ev.Kind {
	case KindToolResult:
		if ev.Tool != nil && ev.Tool.ID != "" && !ev.Tool.SyntheticID {
			return "result:" + ev.Tool.ID
		}
	case KindToolCall, KindThinking:
		if k := groupKeys(ev, true); len(k) > 0 {
			return k[0]
		}
	}
	return ""
}

// pairLeftovers pairs the request-side events still unpaired by their
// exact keys across the whole session, when the key names one such event
// on each side: a tool result whose next call paired nothing (a
// text-only answer, which no exact key pairs) is still the same result.
func (p *pairing) pairLeftovers(live, imp []Event) {
	type cand struct{ i, n int }
	byKey := map[string]*cand{}
	for b := range imp {
		if _, done := p.impTo[b]; done {
			continue
		}
		if k := leftoverKey(&imp[b]); k != "" {
			if c := byKey[k]; c != nil {
				c.n++
			} else {
				byKey[k] = &cand{b, 1}
			}
		}
	}
	liveN := map[string]int{}
	for a := range live {
		if _, done := p.liveTo[a]; !done && live[a].Prov.Side == "request" {
			if k := leftoverKey(&live[a]); k != "" {
				liveN[k]++
			}
		}
	}
	for a := range live {
		if _, done := p.liveTo[a]; done || live[a].Prov.Side != "request" {
			continue
		}
		k := leftoverKey(&live[a])
		if c := byKey[k]; k != "" && c != nil && c.n == 1 && liveN[k] == 1 && imp[c.i].Kind == live[a].Kind {
			p.pair(a, c.i)
		}
	}
}

// mergedOrder orders the merged events: the live timeline is the
// backbone, paired events sit at their live position, an imported event
// without a partner goes after the last paired imported event of its
// thread before it (at the start when there is none), and inside a gap
// between two paired positions the events of the two sides without a
// partner are merged by time, each side keeping its own order, live
// first on a tie.
func mergedOrder(live, imp []Event, p *pairing) []OrderEntry {
	// The imported runs, by the paired imported event they follow (-1:
	// the start).
	runs := map[int][]int{}
	last := map[int]int{}
	for k := range imp {
		if _, paired := p.impTo[k]; paired {
			last[imp[k].Thread] = k
			continue
		}
		a, ok := last[imp[k].Thread]
		if !ok {
			a = -1
		}
		runs[a] = append(runs[a], k)
	}
	var (
		out     []OrderEntry
		gapLive []int
		pending [][]int
	)
	flush := func() {
		lists := append([][]int{gapLive}, pending...)
		pos := make([]int, len(lists))
		for {
			best := -1
			var bt int64
			for li, l := range lists {
				if pos[li] == len(l) {
					continue
				}
				var t int64
				if li == 0 {
					t = live[l[pos[li]]].Time
				} else {
					t = imp[l[pos[li]]].Time
				}
				if best < 0 || t < bt {
					best, bt = li, t
				}
			}
			if best < 0 {
				break
			}
			k := lists[best][pos[best]]
			pos[best]++
			if best == 0 {
				out = append(out, OrderEntry{Tag: OrderLive, Live: live[k].Seq})
			} else {
				out = append(out, OrderEntry{Tag: OrderImport, Imp: imp[k].Seq})
			}
		}
		gapLive, pending = nil, nil
	}
	pending = append(pending, runs[-1])
	for a := range live {
		partners := p.liveTo[a]
		if len(partners) == 0 {
			gapLive = append(gapLive, a)
			continue
		}
		flush()
		if p.remainder[a] {
			out = append(out, OrderEntry{Tag: OrderRemainder, Live: live[a].Seq})
		}
		for _, b := range partners {
			out = append(out, OrderEntry{Tag: OrderPair, Live: live[a].Seq, Imp: imp[b].Seq})
			if r := runs[b]; len(r) > 0 {
				pending = append(pending, r)
			}
		}
	}
	flush()
	return out
}

// MergeView composes the merged timeline of a live session (liveID,
// its events live) and an imported one (impID, imp) in order, with seqs
// 1..len(order). The winner of a pair gives the event (the import for a
// user message, the live side otherwise); the other side's provenance
// goes in Also. Imported threads take the live thread of their first
// pair, the others the numbers after the live ones. It returns the
// events and the thread map of the imported threads.
func MergeView(liveID string, live []Event, impID string, imp []Event, order []OrderEntry) ([]Event, map[int]int, error) {
	get := func(side []Event, seq uint64, id string) (*Event, error) {
		if seq == 0 || seq > uint64(len(side)) || side[seq-1].Seq != seq {
			return nil, fmt.Errorf("merge of %s: no event %d in %s (the merge is stale)", liveID, seq, id)
		}
		return &side[seq-1], nil
	}
	threads := map[int]int{}
	top := 0
	for i := range live {
		top = max(top, live[i].Thread)
	}
	for _, o := range order {
		if o.Tag != OrderPair {
			continue
		}
		l, err := get(live, o.Live, liveID)
		if err != nil {
			return nil, nil, err
		}
		m, err := get(imp, o.Imp, impID)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := threads[m.Thread]; !ok {
			threads[m.Thread] = l.Thread
		}
	}
	thread := func(t int) int {
		n, ok := threads[t]
		if !ok {
			top++
			n = top
			threads[t] = n
		}
		return n
	}
	out := make([]Event, 0, len(order))
	// task and run are those of the last live event placed: a log-only
	// event takes them, as it would have had them had the proxy seen it
	// (the log knows no task of bbengine's).
	var task, run string
	for i := 0; i < len(order); i++ {
		o := order[i]
		var ev Event
		switch o.Tag {
		case OrderLive:
			l, err := get(live, o.Live, liveID)
			if err != nil {
				return nil, nil, err
			}
			ev = *l
		case OrderImport:
			m, err := get(imp, o.Imp, impID)
			if err != nil {
				return nil, nil, err
			}
			ev = *m
			ev.Thread = thread(m.Thread)
			ev.Task, ev.Run = task, run
		case OrderRemainder:
			l, err := get(live, o.Live, liveID)
			if err != nil {
				return nil, nil, err
			}
			var texts []string
			for j := i + 1; j < len(order) && order[j].Tag == OrderPair && order[j].Live == o.Live; j++ {
				m, err := get(imp, order[j].Imp, impID)
				if err != nil {
					return nil, nil, err
				}
				texts = append(texts, m.Text)
			}
			it := strings.Join(texts, "\n")
			if !strings.HasSuffix(l.Text, "\n"+it) {
				return nil, nil, fmt.Errorf("merge of %s: event %d of %s does not end with what it was paired with (the merge is stale)", liveID, o.Live, liveID)
			}
			ev = Event{Kind: KindMessage, Time: l.Time, Thread: l.Thread, Task: l.Task, Run: l.Run, Role: "user",
				Text: strings.TrimSpace(l.Text[:len(l.Text)-len(it)-1]), Meta: "meta", Prov: l.Prov}
		case OrderPair:
			l, err := get(live, o.Live, liveID)
			if err != nil {
				return nil, nil, err
			}
			m, err := get(imp, o.Imp, impID)
			if err != nil {
				return nil, nil, err
			}
			if l.Kind == KindMessage && l.Role == "user" || l.Prov.Side == "request" && l.Kind != KindToolResult && l.Kind != KindSystem {
				// The log splits and labels prompts; no wire text is
				// lost (the remainder is an event of its own). Output a
				// request re-sent is the log's record of it.
				ev = *m
				ev.Thread, ev.Task, ev.Run = l.Thread, l.Task, l.Run
				ev.Also = []Counterpart{{Session: liveID, Seq: l.Seq, Time: l.Time, Prov: l.Prov}}
				break
			}
			ev = *l
			if ev.UUID == "" {
				ev.UUID = m.UUID
			}
			if len(ev.Extra) == 0 {
				ev.Extra = m.Extra
			}
			ev.Also = []Counterpart{{Session: impID, Seq: m.Seq, Time: m.Time, UUID: m.UUID, Prov: m.Prov}}
		}
		if o.Tag != OrderImport {
			task, run = ev.Task, ev.Run
		}
		ev.Seq = uint64(len(out) + 1)
		out = append(out, ev)
	}
	return out, threads, nil
}

// LiveSeqs maps the seqs of the live side of a merged order to the
// first and last merged seq they make (a split user message makes two),
// so that references stored as live seqs (Exchange.FirstSeq, a Task's
// seqs) read as the view's.
func LiveSeqs(order []OrderEntry) map[uint64][2]uint64 {
	out := make(map[uint64][2]uint64, len(order))
	for i, o := range order {
		if o.Live == 0 {
			continue
		}
		seq := uint64(i + 1)
		r, ok := out[o.Live]
		if !ok {
			r[0] = seq
		}
		r[1] = seq
		out[o.Live] = r
	}
	return out
}

// TranslateTasks makes the live seqs of tasks the merged view's.
func TranslateTasks(tasks []Task, seqs map[uint64][2]uint64) {
	for i := range tasks {
		t := &tasks[i]
		if r, ok := seqs[t.FirstSeq]; ok {
			t.FirstSeq = r[0]
		}
		if r, ok := seqs[t.LastSeq]; ok {
			t.LastSeq = r[1]
		}
	}
}

// MergeSummary returns the summary of a merged session: who it is from
// the live member, what the log says from the imported one, the counts
// over the view.
func MergeSummary(live, imp *Session, view []Event, threads map[int]int, st Merged) Session {
	s := *live
	s.Tasks = slices.Clone(live.Tasks)
	s.Title, s.CWD, s.Branch, s.Version, s.Import = imp.Title, imp.CWD, imp.Branch, imp.Version, imp.Import
	s.Agents = nil
	for _, a := range imp.Agents {
		if t, ok := threads[a.Thread]; ok {
			a.Thread = t
		}
		s.Agents = append(s.Agents, a)
	}
	if imp.First != 0 && (s.First == 0 || imp.First < s.First) {
		s.First = imp.First
	}
	s.Last = max(s.Last, imp.Last)
	s.Events = uint64(len(view))
	s.Usage, s.Models, s.Threads = Usage{}, nil, 0
	model := map[int]string{}
	extraRequests, extraErrors := 0, 0
	for i := range view {
		ev := &view[i]
		s.Threads = max(s.Threads, ev.Thread)
		own := len(ev.Also) == 0 && ev.Prov.Side == "import"
		switch ev.Kind {
		case KindModelCall:
			m := "unknown"
			if ev.Call != nil {
				m = cmp.Or(ev.Call.Served, ev.Call.Model, m)
			}
			model[ev.Thread] = m
			if own {
				extraRequests++
			}
			s.Models = addModel(s.Models, m, 1, Usage{})
		case KindUsage:
			if ev.Usage != nil {
				s.Usage.Add(*ev.Usage)
				s.Models = addModel(s.Models, cmp.Or(model[ev.Thread], "unknown"), 0, *ev.Usage)
			}
		case KindError:
			if own {
				extraErrors++
			}
		}
	}
	s.Requests = live.Requests + extraRequests
	s.Errors = live.Errors + extraErrors
	st.Members = []string{live.ID, imp.ID}
	s.Merged = &st
	return s
}

func addModel(ms []ModelUsage, model string, requests int, u Usage) []ModelUsage {
	i := slices.IndexFunc(ms, func(m ModelUsage) bool { return m.Model == model })
	if i < 0 {
		ms = append(ms, ModelUsage{Model: model})
		i = len(ms) - 1
	}
	ms[i].Requests += requests
	ms[i].Usage.Add(u)
	return ms
}

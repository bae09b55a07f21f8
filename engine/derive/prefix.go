package derive

import (
	"hash/maphash"

	"github.com/bbengine/bbengine/codec/jsonscan"
	"github.com/bbengine/bbengine/codec/llm"
)

// A coding agent resends its whole conversation on every turn: by turn
// 300 a request body is about 700 KB, of which a few KB are new. The
// canonicalizer recognizes the resent part by the hashes of the
// conversation's messages as raw JSON bytes, remembered (in memory) for
// the last request placed on each thread, and decodes only the messages
// after the longest prefix it has seen: the cost of a turn follows its
// new bytes, apart from one scan of the body at jsonscan's speed.
//
// It is an optimization only, with no state of its own on disk: the
// events, threads and keys derived are exactly those of decoding the
// whole request (TestPrefixSkipMatchesFullDecode), so a rebuild, or a
// restart that finds the memo empty, derives the same bytes.

// msgSeed seeds the message hashes. It may differ between processes: the
// hashes never leave memory.
var msgSeed = maphash.MakeSeed()

// msgMemo is what the canonicalizer remembers of the last request placed
// on a thread.
type msgMemo struct {
	// hashes and lens identify each message of the request.
	hashes []uint64
	lens   []int
	// open is the offset of the conversation's '[' in the request body,
	// head the hash of the body up to it, starts where each element
	// starts: with them the next request's resent part is found at
	// memory speed (splitResent).
	open   int
	head   uint64
	starts []int
	// items[i] and keys[i] count the items and keys that messages[:i+1]
	// flatten into; cut[i] is set when the conversation may be cut after
	// message i: its last item is keyed, and no later text merges into
	// it (see appendItems).
	items, keys []int
	cut         []bool
	// lead is the number of leading elements an OpenAI request lifts
	// into its system prompt; they are sent again with the messages
	// decoded. msgs[i] counts the messages elements[:i+1] make (a
	// Responses request groups consecutive assistant items into one);
	// asst[i] is set when element i is an assistant item that a next
	// one would join.
	lead int
	msgs []int
	asst []bool
}

// splitConversation finds the conversation array of a request body: the
// offset of its '[' and the span of each element. ok is false when the
// body has no such array, or has it twice.
func splitConversation(api llm.API, body []byte) (open int, spans [][2]int, ok bool) {
	field := llm.ConversationField(api)
	if field == "" {
		return 0, nil, false
	}
	return jsonscan.Split(body, field, nil)
}

// splitResent does what splitConversation does, for a body that resends
// the start of the last request of one of the session's threads
// (jsonscan.Resplit): it checks the bytes before the conversation and the
// resent elements by their hashes, at memory speed, and scans as JSON
// only what follows them. ok is false when no thread's last request
// starts the body the same way, or what follows is not what
// splitConversation accepts: the caller then scans the whole body.
//
// It also returns the body's layout, its elements hashed as
// hashMessages hashes them: the resent ones' hashes are those of the
// thread's memo that resplit checked them against.
func (st *sessState) splitResent(api llm.API, body []byte) (open int, spans [][2]int, l *jsonscan.Layout, ok bool) {
	field := llm.ConversationField(api)
	if field == "" {
		return 0, nil, nil, false
	}
	layouts := make([]*jsonscan.Layout, 0, len(st.memo))
	for _, mm := range st.memo {
		if mm.starts != nil {
			layouts = append(layouts, &jsonscan.Layout{Open: mm.open, Head: mm.head, Starts: mm.starts, Lens: mm.lens, Hashes: mm.hashes})
		}
	}
	l, _, ok = jsonscan.ResplitLayout(msgSeed, body, field, nil, layouts...)
	if !ok {
		return 0, nil, nil, false
	}
	spans = make([][2]int, len(l.Starts))
	for i, s := range l.Starts {
		spans[i] = [2]int{s, s + l.Lens[i]}
	}
	return l.Open, spans, l, true
}

// memoFor returns what a request's messages are in terms of the memo of
// its session's threads: the thread whose last request shares the
// longest prefix of messages with it, cut where the conversation may be
// cut (b messages), or b == 0.
func (st *sessState) memoFor(hashes []uint64, lens []int) (t *thread, memo *msgMemo, b int) {
	for i := range st.convo.Threads {
		th := &st.convo.Threads[i]
		mm := st.memo[th.ID]
		if mm == nil {
			continue
		}
		n := 0
		for n < len(hashes) && n < len(mm.hashes) && hashes[n] == mm.hashes[n] && lens[n] == mm.lens[n] {
			n++
		}
		for n > 0 && !mm.cut[n-1] {
			n--
		}
		if n > b && len(th.Known) >= mm.keys[n-1] {
			t, memo, b = th, mm, n
		}
	}
	return t, memo, b
}

// remember sets the memo of thread id from a request's messages and its
// items; counts of the first from messages come from prev.
func (st *sessState) remember(id int, hashes []uint64, lens []int, lead int, prev *msgMemo, from int, ends []int, ec elemCounts, items []item, base, baseKeys int) {
	if st.memo == nil {
		st.memo = map[int]*msgMemo{}
	}
	mm := &msgMemo{hashes: hashes, lens: lens, lead: lead}
	if prev != nil && from > 0 {
		mm.msgs = append(mm.msgs, prev.msgs[:from]...)
		mm.asst = append(mm.asst, prev.asst[:from]...)
		base := prev.msgs[from-1]
		for _, n := range ec.msgs {
			mm.msgs = append(mm.msgs, base+n)
		}
	} else {
		mm.msgs = append(mm.msgs, ec.msgs...)
	}
	mm.asst = append(mm.asst, ec.asst...)
	if prev != nil && from > 0 {
		mm.items = append(mm.items, prev.items[:from]...)
		mm.keys = append(mm.keys, prev.keys[:from]...)
		mm.cut = append(mm.cut, prev.cut[:from]...)
	}
	keys, at := baseKeys, 0
	for _, end := range ends {
		for ; at < end; at++ {
			if items[at].key != "" {
				keys++
			}
		}
		var cut bool
		switch {
		case end > 0:
			cut = items[end-1].key != "" && !mergeable(&items[end-1])
		case prev != nil && from > 0:
			// No item yet after the resent prefix: the boundary is the
			// prefix's own.
			cut = prev.cut[from-1]
		}
		mm.items = append(mm.items, base+end)
		mm.keys = append(mm.keys, keys)
		mm.cut = append(mm.cut, cut)
	}
	st.memo[id] = mm
	// Forget the memos of threads that are gone.
	if len(st.memo) > len(st.convo.Threads) {
		live := map[int]bool{}
		for i := range st.convo.Threads {
			live[st.convo.Threads[i].ID] = true
		}
		for k := range st.memo {
			if !live[k] {
				delete(st.memo, k)
			}
		}
	}
}

// mergeable reports whether a later assistant text would be joined to
// item it (see appendItems).
func mergeable(it *item) bool {
	return it.role == "assistant" && it.part.Type == llm.PartText && !it.part.Partial && it.part.TextSHA256 == ""
}

// flattenEach is flatten that also returns, for each message, the number
// of items of the messages up to it.
func flattenEach(msgs []llm.Message) (items []item, ends []int) {
	ends = make([]int, 0, len(msgs))
	for _, m := range msgs {
		items = appendItems(items, roleClass(m.Role), m.Parts)
		ends = append(ends, len(items))
	}
	for i := range items {
		items[i].key = itemKey(&items[i])
	}
	return items, ends
}

// hashMessages hashes each span of body.
func hashMessages(body []byte, spans [][2]int) (hashes []uint64, lens []int) {
	hashes, lens = make([]uint64, len(spans)), make([]int, len(spans))
	for i, s := range spans {
		hashes[i] = maphash.Bytes(msgSeed, body[s[0]:s[1]])
		lens[i] = s[1] - s[0]
	}
	return hashes, lens
}

// request is a decoded request and its items, whole or past a resent
// prefix.
type request struct {
	req  *llm.Request
	msgs int // messages in the whole request
	// items are the items of the decoded messages; base is the number of
	// items of the messages before them (0 when decoded whole). keys and
	// at are those of the whole request (at holds base-1 for the keys of
	// the prefix: only the last one's position can matter, see place1).
	items []item
	base  int
	keys  []string
	at    []int

	// What remember needs: the element hashes (nil: not remembered),
	// the leading elements lifted into the system prompt, the memo and
	// element count the prefix came from, the decoded elements' item
	// ends.
	hashes  []uint64
	lens    []int
	open    int
	head    uint64
	starts  []int
	lead    int
	prev    *msgMemo
	from    int
	ends    []int
	counts  elemCounts
	preKeys int
}

// last is the message count of the whole run.
func (ec elemCounts) last() int {
	if len(ec.msgs) == 0 {
		return 0
	}
	return ec.msgs[len(ec.msgs)-1]
}

// reduceBody is body with the conversation's elements lead to b left
// out: the leading elements an OpenAI request lifts into its system
// prompt stay, so the request decodes to the same system prompt.
func reduceBody(body []byte, open int, spans [][2]int, lead, b int) []byte {
	cut := spans[b-1][1] // the white space and ']' after the last element
	if b < len(spans) {
		cut = spans[b][0]
	}
	out := make([]byte, 0, open+1+len(body)-cut+64)
	out = append(out, body[:open+1]...)
	if lead > 0 {
		out = append(out, body[spans[0][0]:spans[lead-1][1]]...)
		if b < len(spans) {
			out = append(out, ',')
		}
	}
	return append(out, body[cut:]...)
}

// elemCounts are the message counts of a run of elements (see
// msgMemo.msgs and asst), counted from the run's start.
type elemCounts struct {
	msgs []int
	asst []bool
}

// elementEnds returns, for each element of a conversation (spans of
// body), the number of items of the elements up to it, and how many
// leading elements are lifted into the system prompt (with lift set;
// their ends are 0). items are the items DecodeRequest gave for them:
// the per-element reading must agree with it, or ok is false. Protocols
// whose elements are one Message each count from msgEnds. prevAsst says
// the element before the run is an assistant item a first one would
// join (Responses).
func elementEnds(api llm.API, body []byte, spans [][2]int, items []item, msgEnds []int, lift, prevAsst bool) (ends []int, ec elemCounts, lead int, ok bool) {
	if api == llm.AnthropicMessages || api == llm.Gemini {
		ec.msgs, ec.asst = make([]int, len(spans)), make([]bool, len(spans))
		for i := range ec.msgs {
			ec.msgs[i] = i + 1
		}
		return msgEnds, ec, 0, len(msgEnds) == len(spans)
	}
	var own []item
	ends = make([]int, 0, len(spans))
	n := 0
	for i, sp := range spans {
		role, parts, skip, known := llm.ElementParts(api, body[sp[0]:sp[1]])
		if !known || skip {
			return nil, ec, 0, false
		}
		if lift && i == lead && role == "system" {
			lead++
			ends = append(ends, 0)
			ec.msgs, ec.asst = append(ec.msgs, 0), append(ec.asst, false)
			continue
		}
		group := api == llm.OpenAIResponses && role == "assistant"
		if !group || !prevAsst {
			n++
		}
		prevAsst = group
		ec.msgs, ec.asst = append(ec.msgs, n), append(ec.asst, group)
		own = appendItems(own, roleClass(role), parts)
		ends = append(ends, len(own))
	}
	if len(own) != len(items) {
		return nil, ec, 0, false
	}
	for i := range own {
		if itemKey(&own[i]) != items[i].key || own[i].role != items[i].role || own[i].part.Type != items[i].part.Type {
			return nil, ec, 0, false
		}
	}
	return ends, ec, lead, true
}

// decodeRequest decodes a request body, skipping the messages a thread
// of the session already saw when it can.
func (d *deriver) decodeRequest(body []byte) (*request, error) {
	opts := &llm.DecoderOptions{TextLimit: d.c.e.opts.TextLimit, NewSpill: d.c.spill}
	var (
		hashes []uint64
		lens   []int
		spans  [][2]int
		open   int
		ok     bool
		head   uint64
		starts []int
	)
	if PrefixSkip {
		var l *jsonscan.Layout
		if open, spans, l, ok = d.st.splitResent(d.api, body); ok {
			d.c.progress.Resent++
			hashes, lens, head, starts = l.Hashes, l.Lens, l.Head, l.Starts
		} else if open, spans, ok = splitConversation(d.api, body); ok {
			hashes, lens = hashMessages(body, spans)
			head = maphash.Bytes(msgSeed, body[:open+1])
			starts = make([]int, len(spans))
			for i, sp := range spans {
				starts[i] = sp[0]
			}
		}
	}
	if ok {
		if t, mm, b := d.st.memoFor(hashes, lens); b > mm.leadOf() {
			req, err := llm.DecodeRequestWith(d.api, reduceBody(body, open, spans, mm.lead, b), opts)
			if err == nil && req.PreviousResponseID == "" {
				items, msgEnds := flattenEach(req.Messages)
				if ends, ec, _, good := elementEnds(d.api, body, spans[b:], items, msgEnds, false, mm.asst[b-1]); good {
					k, base := mm.keys[b-1], mm.items[b-1]
					tk, tat := keysOf(items)
					keys := append(t.Known[:k:k], tk...)
					at := make([]int, len(keys))
					for i := range k {
						at[i] = base - 1
					}
					for j, a := range tat {
						at[k+j] = base + a
					}
					d.c.progress.Skipped += b - mm.lead
					msgs := mm.msgs[b-1]
					if len(ec.msgs) > 0 {
						msgs += ec.msgs[len(ec.msgs)-1]
					}
					return &request{req: req, msgs: msgs, items: items, base: base, keys: keys, at: at,
						hashes: hashes, lens: lens, open: open, head: head, starts: starts, lead: mm.lead, prev: mm, from: b, ends: ends, counts: ec, preKeys: k}, nil
				}
			}
			// Anything odd decodes whole, for the error it gives.
		}
	}
	req, err := llm.DecodeRequestWith(d.api, body, opts)
	if err != nil {
		return nil, err
	}
	items, msgEnds := flattenEach(req.Messages)
	keys, at := keysOf(items)
	r := &request{req: req, msgs: len(req.Messages), items: items, keys: keys, at: at}
	if ok && req.PreviousResponseID == "" {
		if ends, ec, lead, good := elementEnds(d.api, body, spans, items, msgEnds, true, false); good && ec.last() == len(req.Messages) {
			r.hashes, r.lens, r.lead, r.ends, r.counts = hashes, lens, lead, ends, ec
			r.open, r.head, r.starts = open, head, starts
		}
	}
	return r, nil
}

// leadOf is mm.lead, or 0 for no memo.
func (mm *msgMemo) leadOf() int {
	if mm == nil {
		return 0
	}
	return mm.lead
}

// remember sets the memo of the thread the request was placed on.
func (r *request) remember(st *sessState, thread int) {
	if r.hashes == nil {
		return
	}
	st.remember(thread, r.hashes, r.lens, r.lead, r.prev, r.from, r.ends, r.counts, r.items, r.base, r.preKeys)
	mm := st.memo[thread]
	mm.open, mm.head, mm.starts = r.open, r.head, r.starts
}

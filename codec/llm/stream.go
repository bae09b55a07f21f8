package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Spill is where the whole of a long text goes when a Decoder keeps only
// its first DecoderOptions.TextLimit bytes in memory: every byte of the
// text is written to it, in order.
type Spill interface {
	io.Writer
	// Commit ends the text: the spill is kept (a blob store names it by
	// content) and its hex SHA-256 returned.
	Commit() (sum string, err error)
	// Abort drops the spill.
	Abort()
}

// DecoderOptions bound what a Decoder holds in memory.
type DecoderOptions struct {
	// TextLimit is how many bytes of one streamed text (a text, thinking
	// or refusal part, or a tool call's arguments) a Decoder keeps in
	// memory; a longer text goes whole to a Spill from NewSpill, and its
	// Part keeps only the first TextLimit bytes (cut at a character
	// boundary) in Text, with TextBytes and TextSHA256 naming the whole.
	// The default (0) keeps every text whole in memory.
	TextLimit int
	// NewSpill opens a Spill. It is required when TextLimit is set.
	NewSpill func() (Spill, error)
}

// Decoder decodes a response body written to it in pieces as they
// arrive, the streaming counterpart of DecodeResponse: for an SSE stream
// it holds the event being read and what the response keeps, never the
// body; a JSON body (a non-streaming response, an error, a Gemini array)
// is gathered and decoded at Close. The Response it returns is the one
// DecodeResponse returns for the same bytes, except that texts longer
// than the TextLimit are cut as DecoderOptions says. It is not safe for
// concurrent use.
type Decoder struct {
	api   API
	opts  DecoderOptions
	mode  int // modeUnknown until the first non-space byte
	lead  []byte
	whole []byte
	sse   sseSplitter
	st    sseState
	n     int64
	err   error
	done  bool
}

const (
	modeUnknown = iota
	modeSSE
	modeWhole
)

// sseState decodes the events of one provider's stream.
type sseState interface {
	take(ev Event)
	end(n int64) (*Response, error)
	spills() []*textBuf
}

// DecoderFor returns a Decoder of the response body of a request to path
// sent with the given Content-Encoding, or nil when the body cannot be
// decoded as it streams: an API it does not know, or a compressed body
// (which is decoded whole once it has arrived).
func DecoderFor(path, contentEncoding string, opts *DecoderOptions) *Decoder {
	api := Detect(path)
	enc := strings.TrimSpace(contentEncoding)
	if api == "" || (enc != "" && !strings.EqualFold(enc, "identity")) {
		return nil
	}
	return NewDecoder(api, opts)
}

// NewDecoder returns a Decoder of a response body of api; nil opts means
// the defaults.
func NewDecoder(api API, opts *DecoderOptions) *Decoder {
	d := &Decoder{api: api}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.NewSpill == nil {
		d.opts.TextLimit = 0
	}
	return d
}

// Write takes the next bytes of the body. It never fails: what does not
// decode is reported by Close.
func (d *Decoder) Write(p []byte) (int, error) {
	n := len(p)
	d.n += int64(n)
	if d.mode == modeUnknown {
		t := bytes.TrimLeft(p, " \t\r\n")
		if len(t) == 0 {
			d.lead = append(d.lead, p...)
			return n, nil
		}
		d.start(t[0])
		if len(d.lead) > 0 {
			d.feed(d.lead)
			d.lead = nil
		}
	}
	d.feed(p)
	return n, nil
}

// start picks how to decode from the body's first non-space byte.
func (d *Decoder) start(c byte) {
	d.mode = modeWhole
	if c == '{' || c == '[' {
		return
	}
	cfg := &textCfg{limit: d.opts.TextLimit, newSpill: d.opts.NewSpill}
	switch d.api {
	case AnthropicMessages:
		d.st = newAnthropicStream(cfg)
	case OpenAIChat:
		d.st = newChatStream(cfg)
	case OpenAIResponses:
		d.st = newResponsesStream()
	case Gemini:
		d.st = newGeminiSSE()
	default:
		return
	}
	d.mode = modeSSE
	d.sse.fn = d.st.take
}

func (d *Decoder) feed(p []byte) {
	if d.mode == modeSSE {
		d.sse.write(p)
		return
	}
	d.whole = append(d.whole, p...)
}

// Close decodes what was written and returns the response; see
// DecodeResponse for the errors. Spilled texts are committed; one that
// cannot be is an error returned with the response.
func (d *Decoder) Close() (*Response, error) {
	if d.done {
		return nil, errors.New("llm: decoder closed twice")
	}
	d.done = true
	switch d.mode {
	case modeUnknown:
		return DecodeResponse(d.api, d.lead)
	case modeWhole:
		body := d.whole
		d.whole = nil
		return DecodeResponse(d.api, body)
	}
	d.sse.close()
	r, err := d.st.end(d.n)
	if r == nil {
		d.Abort()
		return nil, fmt.Errorf("%s response: %w", d.api, err)
	}
	r.API = d.api
	if err != nil {
		err = fmt.Errorf("%s response: %w", d.api, err)
	}
	return r, err
}

// Abort drops the spills of a decoder that will not be closed.
func (d *Decoder) Abort() {
	d.done = true
	if d.st == nil {
		return
	}
	for _, t := range d.st.spills() {
		t.abort()
	}
}

// sseSplitter is Events as a writer: it splits an SSE body written in
// pieces into the same events, passing each to fn. Event.Data and the
// Event are valid only during the call.
type sseSplitter struct {
	fn      func(Event)
	line    []byte // the line being read
	lineOff int    // its offset in the body
	pos     int    // offset of the next byte written
	skipLF  bool   // the last line ended in CR: an LF next ends nothing
	ev      Event
	data    []byte
	ndata   int
	dataAt  int
	started int
	init    bool
}

func (s *sseSplitter) write(p []byte) {
	if !s.init {
		s.started, s.init = -1, true
	}
	for len(p) > 0 {
		if s.skipLF {
			s.skipLF = false
			if p[0] == '\n' {
				p = p[1:]
				s.pos++
				s.lineOff = s.pos
				continue
			}
		}
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			s.line = append(s.line, p...)
			s.pos += len(p)
			return
		}
		line := p[:i]
		if len(s.line) > 0 {
			s.line = append(s.line, line...)
			line = s.line
		}
		s.pos += i + 1
		s.skipLF = p[i] == '\r'
		s.takeLine(line, s.lineOff)
		s.line = s.line[:0]
		s.lineOff = s.pos
		p = p[i+1:]
	}
}

// close ends the body: the last line and event are taken even without
// their terminators.
func (s *sseSplitter) close() {
	if !s.init {
		s.started, s.init = -1, true
	}
	if len(s.line) > 0 {
		s.takeLine(s.line, s.lineOff)
		s.line = nil
	}
	s.dispatch()
}

func (s *sseSplitter) takeLine(line []byte, off int) {
	if len(line) == 0 {
		s.dispatch()
		return
	}
	if s.started < 0 {
		s.started = off
	}
	if line[0] == ':' {
		return
	}
	field, value := sseField(line)
	switch string(field) {
	case "event":
		s.ev.Type = string(value)
	case "data":
		if s.ndata > 0 {
			s.data = append(s.data, '\n')
		} else {
			s.dataAt = off + len(line) - len(value) + 1
		}
		s.data = append(s.data, value...)
		s.ndata++
	}
}

func (s *sseSplitter) dispatch() {
	if s.ndata > 0 {
		s.ev.Data, s.ev.Offset = s.data, s.started
		if s.ndata == 1 {
			s.ev.dataAt = s.dataAt
		}
		s.fn(s.ev)
	}
	s.ev, s.data, s.ndata, s.started = Event{}, s.data[:0], 0, -1
	if cap(s.data) > 1<<20 {
		s.data = nil
	}
}

// textCfg is how a stream bounds the texts it gathers.
type textCfg struct {
	limit    int
	newSpill func() (Spill, error)
}

// textBuf gathers one streamed text. Up to the limit it is held in b;
// once longer, every byte goes to a spill and b keeps only the first
// limit bytes. trim hashes the text without its leading and trailing
// ASCII white space (see TrimKey), so that a long text can still be
// matched when a later request sends it back.
type textBuf struct {
	cfg   *textCfg
	b     []byte
	n     int64
	sp    Spill
	err   error
	trim  hash.Hash
	ws    []byte // white space seen after the last other byte, not yet hashed
	begun bool   // trim has seen a byte other than white space
}

// WriteString appends s; it never fails (a spill error is kept for
// fill).
func (t *textBuf) WriteString(s string) (int, error) { return textWrite(t, s) }

// Write appends p, as WriteString does.
func (t *textBuf) Write(p []byte) (int, error) { return textWrite(t, p) }

func textWrite[S string | []byte](t *textBuf, s S) (int, error) {
	if len(s) == 0 {
		return 0, nil
	}
	t.n += int64(len(s))
	if t.cfg == nil || t.cfg.limit <= 0 || (t.sp == nil && t.err == nil && len(t.b)+len(s) <= t.cfg.limit) {
		t.b = append(t.b, s...)
		return len(s), nil
	}
	if t.sp == nil && t.err == nil {
		t.sp, t.err = t.cfg.newSpill()
		t.trim = sha256.New()
		if t.err == nil {
			_, t.err = t.sp.Write(t.b)
		}
		t.hashTrim(t.b)
	}
	// For a []byte the conversion is free; a string is copied, as
	// io.WriteString would.
	p := []byte(s)
	if t.err == nil {
		_, t.err = t.sp.Write(p)
	}
	t.hashTrim(p)
	if room := t.cfg.limit - len(t.b); room > 0 {
		t.b = append(t.b, s[:min(room, len(s))]...)
	}
	return len(s), nil
}

func isASCIISpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (t *textBuf) hashTrim(p []byte) {
	for len(p) > 0 {
		i := 0
		for i < len(p) && isASCIISpace(p[i]) {
			i++
		}
		if t.begun {
			t.ws = append(t.ws, p[:i]...)
		}
		p = p[i:]
		j := 0
		for j < len(p) && !isASCIISpace(p[j]) {
			j++
		}
		if j > 0 {
			t.trim.Write(t.ws)
			t.ws = t.ws[:0]
			t.trim.Write(p[:j])
			t.begun = true
		}
		p = p[j:]
	}
}

// String returns the text held in memory (all of it unless spilled).
func (t *textBuf) String() string { return string(t.b) }

// Len returns the length of the whole text.
func (t *textBuf) Len() int64 { return t.n }

// Reset empties t, dropping its spill.
func (t *textBuf) Reset() {
	t.abort()
	cfg := t.cfg
	*t = textBuf{cfg: cfg}
}

// spilled reports whether the text went to a spill.
func (t *textBuf) spilled() bool { return t.sp != nil || t.err != nil }

// fill sets p.Text to the text, or for a spilled one to its first bytes
// (cut at a character boundary) with TextBytes, TextSHA256 and the
// trimmed text's key, committing the spill.
func (t *textBuf) fill(p *Part) error {
	if !t.spilled() {
		p.Text = string(t.b)
		return nil
	}
	b := t.b
	for k := 0; k < utf8.UTFMax && len(b) > 0; k++ {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	p.Text, p.TextBytes = string(b), t.n
	p.TrimSHA256 = hex.EncodeToString(t.trim.Sum(nil))
	err := t.err
	if err == nil {
		p.TextSHA256, err = t.sp.Commit()
	} else if t.sp != nil {
		t.sp.Abort()
	}
	t.sp, t.err = nil, nil
	if err != nil {
		return fmt.Errorf("spill a text of %d bytes: %w", t.n, err)
	}
	return nil
}

func (t *textBuf) abort() {
	if t.sp != nil {
		t.sp.Abort()
		t.sp = nil
	}
}

// TrimKey returns the hex SHA-256 of text without its leading and
// trailing ASCII white space: the digest a spilled Part carries in
// TrimSHA256, for matching texts whole or spilled alike.
func TrimKey(text string) string {
	i, j := 0, len(text)
	for i < j && isASCIISpace(text[i]) {
		i++
	}
	for j > i && isASCIISpace(text[j-1]) {
		j--
	}
	h := sha256.New()
	for s := text[i:j]; len(s) > 0; {
		// In pieces, so a long text is never copied whole.
		n := min(len(s), 64<<10)
		io.WriteString(h, s[:n])
		s = s[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// spillString unquotes the JSON string lit into a Part of type text when
// it is longer than cfg's limit, 64 KiB at a time, so that the whole text
// goes to a spill and is never held: the part is what textBuf.fill makes
// of it. ok is false (and nothing is kept) when cfg is nil, lit is short
// or not a string, or a piece does not unquote cleanly (invalid UTF-8, a
// lone surrogate): the caller then decodes lit as it always has.
func spillString(lit []byte, cfg *textCfg) (Part, bool) {
	if cfg == nil || cfg.limit <= 0 || cfg.newSpill == nil || len(lit) <= cfg.limit {
		return Part{}, false
	}
	t := bytes.TrimSpace(lit)
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return Part{}, false
	}
	in := t[1 : len(t)-1]
	tb := textBuf{cfg: cfg}
	var q, out []byte
	for len(in) > 0 {
		n := stringCut(in, 64<<10)
		q = append(append(append(q[:0], '"'), in[:n]...), '"')
		var err error
		if out, err = jsontext.AppendUnquote(out[:0], q); err != nil {
			tb.abort()
			return Part{}, false
		}
		tb.Write(out)
		in = in[n:]
	}
	p := Part{Type: PartText}
	if err := tb.fill(&p); err != nil {
		return Part{}, false
	}
	return p, true
}

// stringCut returns where to cut the inside of a JSON string literal at
// about n bytes: never inside an escape (a surrogate pair is one), nor
// inside a UTF-8 sequence. It returns len(s) when s is short or has no
// such place.
func stringCut(s []byte, n int) int {
	if len(s) <= n {
		return len(s)
	}
	last := 0
	for i := 0; i < len(s) && i < n; {
		switch {
		case s[i] != '\\':
			i++
		case i+1 < len(s) && s[i+1] == 'u':
			step := 6
			if i+12 <= len(s) && highSurrogate(s[i+2:i+6]) && s[i+6] == '\\' && s[i+7] == 'u' {
				step = 12
			}
			i += step
		default:
			i += 2
		}
		if i < len(s) && s[i]&0xC0 != 0x80 {
			last = i
		}
	}
	if last == 0 {
		return len(s)
	}
	return last
}

// highSurrogate reports whether the four hex digits h name a UTF-16 high
// surrogate (D800 to DBFF).
func highSurrogate(h []byte) bool {
	return len(h) == 4 && (h[0] == 'd' || h[0] == 'D') && strings.IndexByte("89abAB", h[1]) >= 0
}

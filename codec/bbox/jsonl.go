package bbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// The JSONL alternative from the spec: one JSON object per line with the
// keys t (type), c (content), n (name), a (args or action), r (result),
// s (server), m (method), v (value) and q (query).
//
// WriteJSONL maps each line losslessly:
//
//	u: a: th: td: #     {"t":"u","c":body}
//	m:                  {"t":"m","v":mode,"a":rest}
//	t: t! t~ s: p: x: @ {"t":"t","n":name,"a":body,"r":result}
//	c:                  {"t":"c","s":server,"m":method,"a":body,"r":result}
//	o:                  {"t":"o","a":body,"r":result}
//	r:                  {"t":"r","q":query,"r":result}
//	q:                  {"t":"q","c":body,"r":result}
//	unknown line        {"t":"?","c":line}
//	blank line          {"t":""}
//	header              {"t":"---","c":"format: bbox/1\nid: …"}  (first record)
//
// "r" is present exactly when the line has a separator. Continuation
// lines are joined with "\n" to the result when there is one, else to the
// body field. Strings that are not valid UTF-8 cannot be represented in
// JSON; their invalid bytes become U+FFFD.
//
// ReadJSONL reads that and also the spec's looser examples: "a" and "r"
// may be JSON objects or other values (objects become key=value
// arguments, other values their JSON text), a p: record may name its
// action in "a" when it has no "n", and unknown keys become key=value
// arguments.

// WriteJSONL writes doc as JSONL to w.
func WriteJSONL(w io.Writer, doc *Document) error {
	if err := doc.Check(); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	if h := doc.Header; h != nil {
		var text []byte
		for i := range h.Lines {
			if i > 0 {
				text = append(text, '\n')
			}
			text = AppendHeaderLine(text, &h.Lines[i])
		}
		buf = append(buf, `{"t":"---"`...)
		if len(h.Lines) > 0 {
			buf = append(buf, `,"c":`...)
			buf = appendJSONString(buf, string(text))
		}
		if !h.Closed {
			buf = append(buf, `,"v":"unclosed"`...)
		}
		buf = append(buf, "}\n"...)
	}
	for i := range doc.Lines {
		buf = AppendJSONLine(buf, &doc.Lines[i])
		buf = append(buf, '\n')
		if len(buf) > 32<<10 {
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

// AppendJSONLine appends the JSONL record of l (without a newline) to dst.
func AppendJSONLine(dst []byte, l *Line) []byte {
	t := l.Kind.String()
	if l.Kind == KindBlank {
		t = ""
	}
	dst = append(dst, `{"t":`...)
	dst = appendJSONString(dst, t)
	key := func(k, v string) {
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		dst = appendJSONString(dst, v)
	}
	body, result := l.Body, l.Result
	if len(l.More) > 0 {
		if l.Arrow {
			result = l.FullResult()
		} else {
			body = l.Text()
		}
	}
	bodyKey := "a"
	switch l.Kind {
	case KindBlank:
	case KindUser, KindAgent, KindThinking, KindTodos, KindComment, KindUnknown, KindQuestion:
		bodyKey = "c"
	case KindMode:
		key("v", l.Name)
	case KindMCP:
		if s, m, ok := strings.Cut(l.Name, "."); ok {
			key("s", s)
			key("m", m)
		} else {
			key("n", l.Name)
		}
	case KindRecall:
		bodyKey = "q"
	case KindObservation:
	default:
		key("n", l.Name)
	}
	if l.Kind != KindBlank && (body != "" || bodyKey == "c" || len(l.More) > 0 && !l.Arrow) {
		key(bodyKey, body)
	}
	if l.Arrow {
		key("r", result)
	}
	return append(dst, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&15])
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}

// ReadJSONL reads a JSONL document. name labels errors ("file:line: …").
// A record that is not a JSON object, or has an unknown "t", is an error
// naming its line; blank physical lines are skipped.
func ReadJSONL(r io.Reader, name string) (*Document, error) {
	if name == "" {
		name = "-"
	}
	br := bufio.NewReaderSize(r, 64<<10)
	doc := &Document{}
	num := 0
	for {
		raw, err := br.ReadBytes('\n')
		if len(raw) > 0 {
			num++
			if rec := bytes.TrimSpace(raw); len(rec) > 0 {
				if e := readRecord(doc, rec, num); e != nil {
					return nil, fmt.Errorf("%s:%d: %w", name, num, e)
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, num+1, err)
		}
	}
	return doc, nil
}

type kv struct {
	key string
	val json.RawMessage
}

// object decodes a JSON object keeping the order of its keys.
func object(b []byte) ([]kv, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("record is not a JSON object")
	}
	var out []kv
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		k := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("invalid JSON in %q: %v", k, err)
		}
		out = append(out, kv{k, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON object")
	}
	return out, nil
}

// text returns a JSON value as text: a string as is, anything else as
// compact JSON.
func text(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, v) == nil {
		return b.String()
	}
	return string(v)
}

// args returns a JSON value as a call part: an object as key=value
// arguments in order, anything else as text.
func args(v json.RawMessage) string {
	if obj, err := object(v); err == nil {
		parts := make([]string, 0, len(obj))
		for _, f := range obj {
			parts = append(parts, f.key+"="+Quote(text(f.val)))
		}
		return strings.Join(parts, " ")
	}
	return text(v)
}

func readRecord(doc *Document, rec []byte, num int) error {
	obj, err := object(rec)
	if err != nil {
		return err
	}
	get := func(k string) (json.RawMessage, bool) {
		for _, f := range obj {
			if f.key == k {
				return f.val, true
			}
		}
		return nil, false
	}
	tv, ok := get("t")
	if !ok {
		return fmt.Errorf(`record has no "t" (type) key`)
	}
	var t string
	if json.Unmarshal(tv, &t) != nil {
		return fmt.Errorf(`"t" must be a string`)
	}
	if t == "---" {
		if doc.Header != nil || len(doc.Lines) > 0 {
			return fmt.Errorf("header record must come first")
		}
		h := &Header{Closed: true}
		if v, ok := get("v"); ok && text(v) == "unclosed" {
			h.Closed = false
		}
		if c, ok := get("c"); ok {
			for i, s := range strings.Split(text(c), "\n") {
				h.Lines = append(h.Lines, parseHeaderLine(s, i+2))
			}
		}
		doc.Header = h
		return nil
	}
	var k Kind
	if t == "" {
		k = KindBlank
	} else if k, ok = KindOf(t); !ok || k == KindBlank {
		return fmt.Errorf("unknown type t=%q (known: u a t t! t~ o s p m r x c q th td # @ ? and --- for the header)", t)
	}
	l := Line{Kind: k, Pos: Pos{Line: num}}
	used := map[string]bool{"t": true}
	str := func(key string) string {
		v, ok := get(key)
		if !ok {
			return ""
		}
		used[key] = true
		return text(v)
	}
	switch k {
	case KindBlank:
		doc.Lines = append(doc.Lines, l)
		return nil
	case KindMode:
		l.Name = str("v")
		if l.Name == "" {
			l.Name = str("n")
		}
	case KindMCP:
		_, hasS := get("s")
		_, hasM := get("m")
		if hasS || hasM {
			l.Name = str("s") + "." + str("m")
		} else {
			l.Name = str("n")
		}
	default:
		if k.Named() {
			if _, ok := get("n"); ok {
				l.Name = str("n")
			} else if v, ok := get("a"); ok && k == KindPlan {
				l.Name = text(v) // {"t":"p","a":"create",...}: a is the action
				used["a"] = true
			}
		}
	}
	var body []string
	for _, key := range []string{"c", "a", "q"} {
		v, ok := get(key)
		if !ok || used[key] {
			continue
		}
		used[key] = true
		switch {
		case key == "q" && k == KindSubagent:
			body = append(body, Quote(text(v)))
		case key == "a":
			body = append(body, args(v))
		default:
			body = append(body, text(v))
		}
	}
	for _, f := range obj {
		if used[f.key] || f.key == "r" {
			continue
		}
		used[f.key] = true
		body = append(body, f.key+"="+Quote(text(f.val)))
	}
	b := strings.Join(body, " ")
	var result string
	if v, ok := get("r"); ok {
		l.Arrow = true
		result = text(v)
	}
	// Continuation lines live after the first newline of the last field.
	if l.Arrow {
		l.Body = b
		l.Result, l.More = splitMore(result)
	} else {
		l.Body, l.More = splitMore(b)
	}
	if k == KindUnknown {
		l.Body = trimRight(l.Body)
	}
	doc.Lines = append(doc.Lines, l)
	return nil
}

func splitMore(s string) (string, []string) {
	first, rest, ok := strings.Cut(s, "\n")
	if !ok {
		return s, nil
	}
	return first, strings.Split(rest, "\n")
}

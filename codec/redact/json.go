package redact

import (
	"bytes"
	"encoding/json"
)

// JSON returns the JSON document b with every secret in it replaced,
// still valid JSON; it returns b itself when nothing matched. Secrets
// are found in the encoded text, where a value split across the events
// of a stream has come back together; when the document holds a private
// key marker (a block could begin in one string and end in another) or
// a replacement would break it, each string is redacted on its own.
func (r *Redactor) JSON(b []byte) []byte {
	out := r.Bytes(b)
	if len(out) == len(b) && (len(b) == 0 || &out[0] == &b[0]) {
		return b
	}
	// A private key block is the only match that may span a string's
	// end; with one, each string is redacted on its own.
	if !bytes.Contains(b, []byte("PRIVATE KEY-----")) && json.Valid(out) {
		return out
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return out
	}
	enc, err := json.Marshal(r.walk(v))
	if err != nil {
		return out
	}
	return enc
}

// walk redacts the strings of a decoded JSON value.
func (r *Redactor) walk(v any) any {
	switch v := v.(type) {
	case string:
		return r.String(v)
	case []any:
		for i := range v {
			v[i] = r.walk(v[i])
		}
	case map[string]any:
		for k, e := range v {
			v[k] = r.walk(e)
		}
	}
	return v
}

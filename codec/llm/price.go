package llm

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Price is a model's list price in US dollars per million tokens.
// CacheRead is the price of a cache read; zero means Input, so that a
// table that leaves it out never prices a read at $0. CacheWrite is the price of a cache write (Anthropic's 5-minute one);
// zero means Input. CacheWrite1h is the price of a 1-hour cache write;
// zero means CacheWrite.
type Price struct {
	Input        float64 `json:"input" yaml:"input"`
	Output       float64 `json:"output" yaml:"output"`
	CacheRead    float64 `json:"cache_read,omitempty" yaml:"cache_read"`
	CacheWrite   float64 `json:"cache_write,omitempty" yaml:"cache_write"`
	CacheWrite1h float64 `json:"cache_write_1h,omitempty" yaml:"cache_write_1h"`
}

// PriceOf returns the price of model, and false when neither table nor
// the built-in price table (BuiltinPrices, the one bbengine usage
// prices by) knows it. table maps model name prefixes to prices (a
// configured price table; nil for none); its entries win over the
// built-in ones.
func PriceOf(model string, table map[string]Price) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "anthropic/claude-sonnet-4"
	}
	best, found := -1, false
	var p Price
	for prefix, tp := range table {
		if strings.HasPrefix(m, strings.ToLower(prefix)) && len(prefix) > best {
			best, p, found = len(prefix), tp, true
		}
	}
	if found {
		return p, true
	}
	p, _, found = BuiltinPrices().Lookup(model)
	return p, found
}

// Cost returns the price of u at p in US dollars. Input in u includes
// cache reads and writes (see codec/llm.Usage); each token is priced
// once, at the rate of its kind: plain input, cache read, cache write
// (the 1-hour part of the writes at CacheWrite1h), output. A kind with
// no price (zero) falls back: cache reads and writes to Input, 1-hour
// writes to the write price; a token with a price is never free.
func (p Price) Cost(u Usage) float64 {
	plain := u.Input - u.CacheRead - u.CacheCreation
	if plain < 0 {
		plain = 0
	}
	read := p.CacheRead
	if read == 0 {
		read = p.Input
	}
	write := p.CacheWrite
	if write == 0 {
		write = p.Input
	}
	write1h := p.CacheWrite1h
	if write1h == 0 {
		write1h = write
	}
	long := min(max(u.CacheCreation1h, 0), u.CacheCreation)
	return (float64(plain)*p.Input + float64(u.CacheRead)*read +
		float64(u.CacheCreation-long)*write + float64(long)*write1h + float64(u.Output)*p.Output) / 1e6
}

// Prices is a dated table of list prices, in US dollars per million
// tokens, by model name: the file format of prices.json (the table
// built into bbengine) and of `bbengine usage --prices FILE`:
//
//	{
//	  "date": "2026-11-01",
//	  "source": "where the prices come from (optional)",
//	  "models": {
//	    "claude-sonnet-4-5": {"input": 3, "output": 15, "cache_read": 0.3,
//	                          "cache_write": 3.75, "cache_write_1h": 6}
//	  }
//	}
//
// input and output are required; cache_read and cache_write default to
// input (0 means the same: Cost never prices a cache read or write at
// $0 because a table left it out), cache_write_1h to cache_write. A model matches an
// entry by its exact name, after dropping a provider prefix
// ("anthropic/"), a context tag ("[1m]") and a date suffix
// ("-20250929", "-2025-08-07", "@20250514", "-latest"): no looser
// matching, so that a model the table does not name is unpriced rather
// than priced as a neighbour. A Prices is not modified after it is made
// and is safe for concurrent use.
type Prices struct {
	// Date is the day the prices were checked (YYYY-MM-DD).
	Date string `json:"date"`
	// Currency and Source say what the figures are and where they come
	// from.
	Currency string `json:"currency,omitempty"`
	Source   string `json:"source,omitempty"`
	// Models are the prices by model name (lower case).
	Models map[string]Price `json:"models"`
	// File is where the table was read from ("built-in" for prices.json).
	File string `json:"file,omitempty"`
}

//go:embed prices.json
var pricesJSON []byte

// BuiltinPrices returns the table built into bbengine (prices.json). The
// caller may not modify it.
func BuiltinPrices() *Prices { return builtin }

var builtin = func() *Prices {
	p, err := ParsePrices("built-in prices.json", pricesJSON)
	if err != nil {
		panic(err)
	}
	return p
}()

// ErrBadPrices marks a price table that does not parse or validate.
var ErrBadPrices = errors.New("llm: bad price table")

// ParsePrices parses and checks a price table read from the file name.
// Its errors wrap ErrBadPrices and name the file, the line and the field.
func ParsePrices(name string, b []byte) (*Prices, error) {
	fail := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrBadPrices, name, lineOf(b, off), fmt.Sprintf(format, args...))
	}
	var raw struct {
		Date     *string                    `json:"date"`
		Currency string                     `json:"currency"`
		Source   string                     `json:"source"`
		Models   map[string]json.RawMessage `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(fail, b, err)
	}
	if dec.More() {
		return nil, fail(dec.InputOffset(), "more than one JSON value")
	}
	if raw.Date == nil {
		return nil, fail(0, `no "date": say when the prices were checked ("date": "2026-11-01")`)
	}
	if _, err := time.Parse(time.DateOnly, *raw.Date); err != nil {
		return nil, fail(keyOffset(b, "date", 0), `"date" %q is not a day (YYYY-MM-DD)`, *raw.Date)
	}
	if len(raw.Models) == 0 {
		return nil, fail(keyOffset(b, "models", 0), `no "models": a table needs at least one model`)
	}
	p := &Prices{Date: *raw.Date, Currency: raw.Currency, Source: raw.Source, Models: make(map[string]Price, len(raw.Models)), File: name}
	models := keyOffset(b, "models", 0)
	for _, model := range slices.Sorted(func(yield func(string) bool) {
		for k := range raw.Models {
			if !yield(k) {
				return
			}
		}
	}) {
		at := keyOffset(b, model, models)
		val := at // where the model's object starts, for errors inside it
		if i := bytes.Index(b[at:], raw.Models[model]); i >= 0 {
			val = at + int64(i)
		}
		var e struct {
			Input        *float64 `json:"input"`
			Output       *float64 `json:"output"`
			CacheRead    float64  `json:"cache_read"`
			CacheWrite   float64  `json:"cache_write"`
			CacheWrite1h float64  `json:"cache_write_1h"`
		}
		d := json.NewDecoder(bytes.NewReader(raw.Models[model]))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, jsonError(func(off int64, format string, args ...any) error {
				return fail(val+off, "model %q: %s", model, fmt.Sprintf(format, args...))
			}, raw.Models[model], err)
		}
		for _, f := range []struct {
			name string
			v    *float64
		}{{"input", e.Input}, {"output", e.Output}} {
			if f.v == nil {
				return nil, fail(at, "model %q: no %q price", model, f.name)
			}
		}
		if *e.Input < 0 || *e.Output < 0 || e.CacheRead < 0 || e.CacheWrite < 0 || e.CacheWrite1h < 0 {
			return nil, fail(at, "model %q: a price is negative", model)
		}
		key := strings.ToLower(model)
		if _, dup := p.Models[key]; dup {
			return nil, fail(at, "model %q is listed twice (names are not case-sensitive)", model)
		}
		p.Models[key] = Price{Input: *e.Input, Output: *e.Output, CacheRead: e.CacheRead, CacheWrite: e.CacheWrite, CacheWrite1h: e.CacheWrite1h}
	}
	return p, nil
}

// jsonError turns a decoding error of b into fail's error at its offset,
// naming the field.
func jsonError(fail func(int64, string, ...any) error, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fail(se.Offset, "not JSON: %v", se)
	case errors.As(err, &te):
		want := "number"
		switch te.Type.Kind() {
		case reflect.String:
			want = "string"
		case reflect.Map, reflect.Struct, reflect.Pointer:
			want = "JSON object"
		}
		return fail(te.Offset, "field %q is a JSON %s, want a %s", te.Field, te.Value, want)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fail(int64(len(b)), "the JSON ends early")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name := strings.Trim(f, `"`)
		return fail(keyOffset(b, name, 0), "unknown field %s (the fields are date, currency, source, models; a model has input, output, cache_read, cache_write, cache_write_1h)", f)
	}
	return fail(0, "%v", err)
}

// keyOffset returns the offset in b of the first object key name at or
// after from, or from when there is none.
func keyOffset(b []byte, name string, from int64) int64 {
	k, _ := json.Marshal(name)
	if i := bytes.Index(b[from:], k); i >= 0 {
		return from + int64(i)
	}
	return from
}

// lineOf returns the 1-based line of offset off in b.
func lineOf(b []byte, off int64) int {
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte{'\n'})
}

// modelSuffix is what Lookup drops from the end of a model name: a date
// or "-latest".
var modelSuffix = regexp.MustCompile(`(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2})|-latest)$`)

// Lookup returns the price of model and the name of the entry it
// matched, or false when the table does not name it (see Prices).
func (p *Prices) Lookup(model string) (Price, string, bool) {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.IndexByte(m, '['); i > 0 && strings.HasSuffix(m, "]") {
		m = m[:i]
	}
	if pr, ok := p.Models[m]; ok {
		return pr, m, true
	}
	if t := modelSuffix.ReplaceAllString(m, ""); t != m {
		if pr, ok := p.Models[t]; ok {
			return pr, t, true
		}
	}
	return Price{}, "", false
}

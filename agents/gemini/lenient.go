package gemini

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// decodeLenient decodes the JSON object raw into v, a pointer to a
// struct of json-tagged fields, one field at a time: a field whose value
// is of another type than the struct's (a newer Gemini CLI may write a
// number where this version reads a string) is left unset and its path
// (prefix, then ".name", "[i]") appended to bad; an object field or an
// array of objects is decoded so in turn, so that one odd member costs
// only itself. It reports false, and decodes nothing, when raw is no
// JSON object.
func decodeLenient(raw []byte, v any, prefix string, bad *[]string) bool {
	return decodeValue(bytes.TrimSpace(raw), reflect.ValueOf(v).Elem(), prefix, bad)
}

func decodeValue(raw []byte, v reflect.Value, path string, bad *[]string) bool {
	if len(raw) == 0 || string(raw) == "null" {
		return true
	}
	switch {
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
		if raw[0] != '{' {
			*bad = append(*bad, path)
			return false
		}
		n := reflect.New(v.Type().Elem())
		decodeValue(raw, n.Elem(), path, bad)
		v.Set(n)
		return true
	case v.Kind() == reflect.Struct:
		var obj map[string]json.RawMessage
		if raw[0] != '{' || json.Unmarshal(raw, &obj) != nil {
			*bad = append(*bad, path)
			return false
		}
		decodeFields(obj, v, path, bad)
		return true
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		var elems []json.RawMessage
		if raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
			*bad = append(*bad, path)
			return false
		}
		s := reflect.MakeSlice(v.Type(), 0, len(elems))
		for i, e := range elems {
			n := reflect.New(v.Type().Elem()).Elem()
			if decodeValue(bytes.TrimSpace(e), n, path+"["+strconv.Itoa(i)+"]", bad) {
				s = reflect.Append(s, n)
			}
		}
		v.Set(s)
		return true
	}
	if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
		v.SetZero()
		*bad = append(*bad, path)
		return false
	}
	return true
}

// decodeFields decodes the members of obj into the fields of the struct
// v by their json tags (an embedded struct's fields being v's own).
func decodeFields(obj map[string]json.RawMessage, v reflect.Value, path string, bad *[]string) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			decodeFields(obj, v.Field(i), path, bad)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		if raw, ok := obj[name]; ok {
			decodeValue(bytes.TrimSpace(raw), v.Field(i), path+"."+name, bad)
		}
	}
}
